// Network partitions with iptables: a dedicated chain (TERN-CHAOS-<n>) jumped to from OUTPUT,
// one DROP rule per direction of every cut pair: packets from A's cgroup to B's address:port,
// and from B's cgroup to A's address:port. Clients (this runner) stay connected to everyone.
// Fails loudly when iptables or cgroups are missing, and always flushes its chain on heal/close.
// A cut is one iptables-restore run, asynchronous: all its rules take effect at once, and the
// runner's event loop (which hosts the workload's clients) never blocks on iptables. With one
// execFileSync per rule a 36-rule majority/minority split took 20-30 s on a loaded machine,
// during which every client request of the run stalled (that was the "7 s InitProducerId").
import { execFile, execFileSync } from "node:child_process";
import type { NodeCgroups } from "./cgroups.js";

export const IPTABLES_INSTALL_HINT = "apt-get install -y iptables";
const RULES_MAX = 512;
const RESTORE_TIMEOUT_MS = 30_000;

export interface Endpoint {
  /** node name (role-id), its cgroup identifies its packets */
  readonly name: string;
  /** host:port it listens on */
  readonly address: string;
}

function iptables(args: string[]): string {
  return execFileSync("iptables", ["-w", "5", ...args], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
}

/** One established TCP connection of a local process, from `ss -tnpH`. */
export interface Connection {
  readonly local: string;
  readonly peer: string;
  readonly pids: readonly number[];
}

/** Parses `ss -tnpH state established` lines: "0 0 127.0.0.1:5432 127.0.0.10:10405 users:(("node",pid=12,fd=3))". */
export function parseConnections(text: string): Connection[] {
  const out: Connection[] = [];
  for (const line of text.split("\n")) {
    const fields = line.trim().split(/\s+/);
    if (fields.length < 4) continue;
    const pids = [...line.matchAll(/pid=(\d+)/g)].map((m) => Number(m[1]));
    out.push({ local: fields[2]!, peer: fields[3]!, pids });
  }
  return out;
}

function establishedConnections(): Promise<Connection[]> {
  return new Promise((resolve, reject) => {
    execFile(
      "ss",
      ["-tnpH", "state", "established"],
      { timeout: RESTORE_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 },
      (e, stdout) =>
        e
          ? reject(new Error(`ss failed: ${e.message}`))
          : resolve(parseConnections(String(stdout))),
    );
  });
}

/** iptables-restore --noflush of one ruleset, without blocking the event loop. */
function restore(ruleset: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      "iptables-restore",
      ["-w", "5", "--noflush"],
      { timeout: RESTORE_TIMEOUT_MS },
      (e, _stdout, stderr) => {
        if (e) reject(new Error(`iptables-restore failed: ${String(stderr).trim() || e.message}`));
        else resolve();
      },
    );
    child.stdin?.end(ruleset);
  });
}

export class NetworkPartitioner {
  private readonly chain: string;
  private installed = false;
  private rules = 0;

  constructor(
    private readonly cgroups: NodeCgroups,
    tag: string,
  ) {
    this.chain = `TERN-CHAOS-${tag}`.slice(0, 28);
  }

  /** Throws with the fix when partitions cannot be made here. */
  ensureAvailable(): void {
    try {
      iptables(["-V"]);
    } catch (e) {
      throw new Error(
        `iptables is not usable (${(e as Error).message.split("\n")[0]}); install it: ${IPTABLES_INSTALL_HINT}`,
        { cause: e },
      );
    }
    if (this.cgroups.unavailable)
      throw new Error(`network partitions need per-node cgroups: ${this.cgroups.unavailable}`);
    if (!this.installed) {
      try {
        iptables(["-N", this.chain]);
      } catch {
        iptables(["-F", this.chain]); // left over from a crashed run: start clean
      }
      iptables(["-I", "OUTPUT", "1", "-j", this.chain]);
      this.installed = true;
    }
  }

  /**
   * Drops all traffic between every node of side a and every node of side b, both directions, in
   * one atomic step. The address rules stop what each side sends to the other's listener; the
   * connections already open get a rule each for the listener's answers to the client's own
   * port, or a stream a node opened before the cut would go on pushing data to it (a metadata
   * watch keeps delivering updates although the client's ACKs are dropped).
   */
  async cut(a: readonly Endpoint[], b: readonly Endpoint[]): Promise<number> {
    this.ensureAvailable();
    const connections = await establishedConnections();
    const rules: string[] = [];
    for (const x of a) {
      for (const y of b) {
        if (x.name === y.name) continue;
        rules.push(this.dropRule(x, y), this.dropRule(y, x));
        rules.push(...this.answerRules(connections, x, y), ...this.answerRules(connections, y, x));
      }
    }
    if (this.rules + rules.length > RULES_MAX)
      throw new Error(`more than ${RULES_MAX} partition rules`);
    await restore(`*filter\n${rules.join("\n")}\nCOMMIT\n`);
    this.rules += rules.length;
    return rules.length;
  }

  /** Rules dropping what server's listener sends back on the connections client opened to it. */
  private answerRules(
    connections: readonly Connection[],
    client: Endpoint,
    server: Endpoint,
  ): string[] {
    const pids = new Set(this.cgroups.pids(client.name));
    return connections
      .filter((c) => c.peer === server.address && c.pids.some((p) => pids.has(p)))
      .map((c) => this.dropRule(server, { name: client.name, address: c.local }));
  }

  private dropRule(from: Endpoint, to: Endpoint): string {
    const [host, port] = to.address.split(":");
    this.cgroups.ensure(from.name);
    return `-A ${this.chain} -m cgroup --path ${this.cgroups.path(from.name)} -p tcp -d ${host!} --dport ${port!} -j DROP`;
  }

  /** Removes every cut (the chain stays hooked until close). */
  async heal(): Promise<void> {
    if (!this.installed) return;
    await new Promise<void>((resolve, reject) =>
      execFile(
        "iptables",
        ["-w", "5", "-F", this.chain],
        { timeout: RESTORE_TIMEOUT_MS },
        (e, _o, stderr) =>
          e
            ? reject(new Error(`iptables -F failed: ${String(stderr).trim() || e.message}`))
            : resolve(),
      ),
    );
    this.rules = 0;
  }

  /** Flushes and removes the chain; safe to call more than once. */
  close(): void {
    if (!this.installed) return;
    try {
      iptables(["-F", this.chain]);
      iptables(["-D", "OUTPUT", "-j", this.chain]);
      iptables(["-X", this.chain]);
    } finally {
      this.installed = false;
      this.rules = 0;
    }
  }

  activeRules(): number {
    return this.rules;
  }
}

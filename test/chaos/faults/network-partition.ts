// Network partitions with iptables: a dedicated chain (TERN-CHAOS-<n>) jumped to from OUTPUT,
// one DROP rule per direction of every cut pair: packets from A's cgroup to B's address:port,
// and from B's cgroup to A's address:port; an asymmetric cut has the rules of one direction. Clients (this runner) stay connected to everyone.
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

/** Sums the packet counters of `iptables -L <chain> -v -x -n` (rule lines start with pkts bytes target). */
export function parseDroppedPackets(listing: string): number {
  let sum = 0;
  for (const line of listing.split("\n")) {
    const m = /^\s*(\d+)\s+\d+\s+DROP\b/.exec(line);
    if (m) sum += Number(m[1]);
  }
  return sum;
}

/** Every pair of a and b, in both orders (a node on both sides is never cut from itself). */
export function symmetricPairs(
  a: readonly Endpoint[],
  b: readonly Endpoint[],
): Array<readonly [Endpoint, Endpoint]> {
  const out: Array<readonly [Endpoint, Endpoint]> = [];
  for (const x of a) for (const y of b) if (x.name !== y.name) out.push([x, y], [y, x]);
  return out;
}

export interface CgroupLookup {
  /** The cgroup path of a node, as `-m cgroup --path` takes it. */
  cgroupPath(name: string): string;
  /** The pids in a node's cgroup. */
  pids(name: string): readonly number[];
}

/**
 * The iptables-restore lines of a directed cut: for each pair [from, to], drop from's packets
 * to to's listener, and from's answers on every connection to's processes opened to from's
 * listener (to the client's local port).
 */
export function cutRules(
  chain: string,
  pairs: ReadonlyArray<readonly [Endpoint, Endpoint]>,
  connections: readonly Connection[],
  cgroups: CgroupLookup,
): string[] {
  const drop = (from: Endpoint, toAddress: string): string => {
    const [host, port] = toAddress.split(":");
    return `-A ${chain} -m cgroup --path ${cgroups.cgroupPath(from.name)} -p tcp -d ${host!} --dport ${port!} -j DROP`;
  };
  const rules: string[] = [];
  for (const [from, to] of pairs) {
    if (from.name === to.name) continue;
    rules.push(drop(from, to.address));
    const clientPids = new Set(cgroups.pids(to.name));
    for (const c of connections)
      if (c.peer === from.address && c.pids.some((p) => clientPids.has(p)))
        rules.push(drop(from, c.local));
  }
  return rules;
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
   * one atomic step (see cutDirected).
   */
  async cut(a: readonly Endpoint[], b: readonly Endpoint[]): Promise<number> {
    return this.cutDirected(symmetricPairs(a, b));
  }

  /**
   * Drops everything the first node of each pair sends to the second, in one atomic step; a pair
   * in both orders cuts both directions. The address rule stops what the sender sends to the
   * other's listener; the connections the other opened to the sender get a rule each for the
   * sender's answers to the client's own port, or a stream opened before the cut would go on
   * pushing data (a metadata watch keeps delivering updates although the client's ACKs are
   * dropped).
   */
  async cutDirected(pairs: ReadonlyArray<readonly [Endpoint, Endpoint]>): Promise<number> {
    this.ensureAvailable();
    const connections = await establishedConnections();
    for (const [from] of pairs) this.cgroups.ensure(from.name);
    const rules = cutRules(this.chain, pairs, connections, {
      cgroupPath: (name) => this.cgroups.path(name),
      pids: (name) => this.cgroups.pids(name),
    });
    if (this.rules + rules.length > RULES_MAX)
      throw new Error(`more than ${RULES_MAX} partition rules`);
    await restore(`*filter\n${rules.join("\n")}\nCOMMIT\n`);
    this.rules += rules.length;
    return rules.length;
  }

  /** Packets the chain's rules dropped since the last heal: the proof a cut took effect. */
  async droppedPackets(): Promise<number> {
    if (!this.installed) return 0;
    return new Promise((resolve, reject) =>
      execFile(
        "iptables",
        ["-w", "5", "-L", this.chain, "-v", "-x", "-n"],
        { timeout: RESTORE_TIMEOUT_MS },
        (e, stdout, stderr) =>
          e
            ? reject(new Error(`iptables -L failed: ${String(stderr).trim() || e.message}`))
            : resolve(parseDroppedPackets(String(stdout))),
      ),
    );
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

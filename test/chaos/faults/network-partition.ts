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
  return execFileSync("iptables", ["-w", "5", ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

/** iptables-restore --noflush of one ruleset, without blocking the event loop. */
function restore(ruleset: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = execFile("iptables-restore", ["-w", "5", "--noflush"], { timeout: RESTORE_TIMEOUT_MS }, (e, _stdout, stderr) => {
      if (e) reject(new Error(`iptables-restore failed: ${String(stderr).trim() || e.message}`));
      else resolve();
    });
    child.stdin?.end(ruleset);
  });
}

export class NetworkPartitioner {
  private readonly chain: string;
  private installed = false;
  private rules = 0;

  constructor(private readonly cgroups: NodeCgroups, tag: string) {
    this.chain = `TERN-CHAOS-${tag}`.slice(0, 28);
  }

  /** Throws with the fix when partitions cannot be made here. */
  ensureAvailable(): void {
    try {
      iptables(["-V"]);
    } catch (e) {
      throw new Error(`iptables is not usable (${(e as Error).message.split("\n")[0]}); install it: ${IPTABLES_INSTALL_HINT}`);
    }
    if (this.cgroups.unavailable) throw new Error(`network partitions need per-node cgroups: ${this.cgroups.unavailable}`);
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

  /** Drops all traffic between every node of side a and every node of side b, both directions, in one atomic step. */
  async cut(a: readonly Endpoint[], b: readonly Endpoint[]): Promise<number> {
    this.ensureAvailable();
    const rules: string[] = [];
    for (const x of a) {
      for (const y of b) {
        if (x.name === y.name) continue;
        rules.push(this.dropRule(x, y), this.dropRule(y, x));
      }
    }
    if (this.rules + rules.length > RULES_MAX) throw new Error(`more than ${RULES_MAX} partition rules`);
    await restore(`*filter\n${rules.join("\n")}\nCOMMIT\n`);
    this.rules += rules.length;
    return rules.length;
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
      execFile("iptables", ["-w", "5", "-F", this.chain], { timeout: RESTORE_TIMEOUT_MS }, (e, _o, stderr) => (e ? reject(new Error(`iptables -F failed: ${String(stderr).trim() || e.message}`)) : resolve())),
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

// Network partitions with iptables: a dedicated chain (TERN-CHAOS-<n>) jumped to from OUTPUT,
// one DROP rule per direction of every cut pair: packets from A's cgroup to B's address:port,
// and from B's cgroup to A's address:port. Clients (this runner) stay connected to everyone.
// Fails loudly when iptables or cgroups are missing, and always flushes its chain on heal/close.
import { execFileSync } from "node:child_process";
import type { NodeCgroups } from "./cgroups.js";

export const IPTABLES_INSTALL_HINT = "apt-get install -y iptables";
const RULES_MAX = 512;

export interface Endpoint {
  /** node name (role-id), its cgroup identifies its packets */
  readonly name: string;
  /** host:port it listens on */
  readonly address: string;
}

function iptables(args: string[]): string {
  return execFileSync("iptables", ["-w", "5", ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
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

  /** Drops all traffic between every node of side a and every node of side b, both directions. */
  cut(a: readonly Endpoint[], b: readonly Endpoint[]): number {
    this.ensureAvailable();
    let added = 0;
    for (const x of a) {
      for (const y of b) {
        if (x.name === y.name) continue;
        this.drop(x, y);
        this.drop(y, x);
        added += 2;
      }
    }
    return added;
  }

  private drop(from: Endpoint, to: Endpoint): void {
    if (this.rules >= RULES_MAX) throw new Error(`more than ${RULES_MAX} partition rules`);
    const [host, port] = to.address.split(":");
    this.cgroups.ensure(from.name);
    iptables(["-A", this.chain, "-m", "cgroup", "--path", this.cgroups.path(from.name), "-p", "tcp", "-d", host!, "--dport", port!, "-j", "DROP"]);
    this.rules++;
  }

  /** Removes every cut (the chain stays hooked until close). */
  heal(): void {
    if (!this.installed) return;
    iptables(["-F", this.chain]);
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

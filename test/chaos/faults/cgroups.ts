// One cgroup (v2) per node process, so iptables' cgroup match can tell which process sent a
// packet: on loopback every connection's source address is 127.0.0.1 whatever the node, so the
// sender is identified by its cgroup and the receiver by its own address and port. A process
// is moved right after spawn, before it opens any socket (sockets keep their creation cgroup).
import { existsSync, mkdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const CGROUP2_ROOTS = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"];

function cgroup2Root(): string | undefined {
  for (const root of CGROUP2_ROOTS) {
    try {
      if (
        existsSync(join(root, "cgroup.procs")) &&
        readFileSync("/proc/mounts", "utf8")
          .split("\n")
          .some((l) => l.split(" ")[1] === root && l.split(" ")[2] === "cgroup2")
      )
        return root;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

export class NodeCgroups {
  private readonly root = cgroup2Root();
  private readonly created = new Set<string>();
  /** Why nodes cannot be placed (partitions must then refuse to run), or undefined. */
  unavailable: string | undefined;

  constructor(readonly parent: string) {
    if (this.root === undefined) this.unavailable = "no writable cgroup2 mount";
  }

  /** The cgroup path as iptables' `-m cgroup --path` expects it (relative to the cgroup2 root). */
  path(node: string): string {
    return `${this.parent}/${node}`;
  }

  /** Creates the node's cgroup if needed (iptables refuses a --path that does not exist). */
  ensure(node: string): void {
    if (this.root === undefined) return;
    mkdirSync(join(this.root, this.parent, node), { recursive: true });
    this.created.add(node);
  }

  place(node: string, pid: number): void {
    if (this.root === undefined) return;
    try {
      const dir = join(this.root, this.parent, node);
      mkdirSync(dir, { recursive: true });
      this.created.add(node);
      writeFileSync(join(dir, "cgroup.procs"), String(pid));
    } catch (e) {
      this.unavailable = `cannot place ${node} in a cgroup: ${(e as Error).message}`;
    }
  }

  /** The processes in the node's cgroup now (empty when cgroups are unavailable or the node is down). */
  pids(node: string): number[] {
    if (this.root === undefined) return [];
    try {
      return readFileSync(join(this.root, this.parent, node, "cgroup.procs"), "utf8")
        .split("\n")
        .filter((l) => l !== "")
        .map(Number);
    } catch {
      return [];
    }
  }

  /** Removes the cgroups (only empty ones can go; a live process keeps its own). */
  removeAll(): void {
    if (this.root === undefined) return;
    for (const node of this.created) {
      try {
        rmdirSync(join(this.root, this.parent, node));
      } catch {
        // still holds a process or already gone
      }
    }
    try {
      rmdirSync(join(this.root, this.parent));
    } catch {
      // not empty or absent
    }
  }
}

// Starts, kills and restarts real raft-node-process processes (built JS under dist/) for the
// integration test and the raft benchmark. Everything listens on 127.0.0.1; every wait is bounded.
import { spawn, type ChildProcess } from "node:child_process";
import { createWriteStream, existsSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { freePort } from "../../../scripts/cluster/port-check.js";
import { NODE_PROCESS_FLAGS } from "../../../libs/common/node-flags.js";
import { until } from "../../../libs/common/poll.js";

export interface RaftClusterOptions {
  readonly baseDir: string;
  readonly groups: number;
  readonly tickMs?: number;
  readonly electionTicks?: number;
  readonly heartbeatTicks?: number;
  readonly snapshotEntries?: number;
  readonly record?: boolean;
  readonly nodeIds?: readonly number[];
  readonly startTimeoutMs?: number;
}

export interface RaftProcess {
  readonly id: number;
  readonly dir: string;
  raftPort: number;
  controlPort: number;
  child: ChildProcess | undefined;
}

export interface GroupStatus {
  leader: number;
  term: number;
  isLeader: boolean;
  applied: number;
  count: number;
}

const SEARCH_LEVELS_MAX = 8;
const REQUEST_TIMEOUT_MS = 30_000;

export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < SEARCH_LEVELS_MAX; i++) {
    if (existsSync(join(dir, "package.json")) && existsSync(join(dir, "proto"))) return dir;
    dir = dirname(dir);
  }
  throw new Error("repository root not found");
}

export function nodeProcessScript(): string {
  const script = join(repoRoot(), "dist", "test", "integration", "helpers", "raft-node-process.js");
  if (!existsSync(script))
    throw new Error(`${script} is missing: run npx tsc -p tsconfig.json first`);
  return script;
}

export class RaftProcessCluster {
  readonly nodes: RaftProcess[];

  private constructor(private readonly options: RaftClusterOptions) {
    this.nodes = (options.nodeIds ?? [1, 2, 3]).map((id) => ({
      id,
      dir: join(options.baseDir, `node-${id}`),
      raftPort: 0,
      controlPort: 0,
      child: undefined,
    }));
  }

  static async start(options: RaftClusterOptions): Promise<RaftProcessCluster> {
    const cluster = new RaftProcessCluster(options);
    try {
      await Promise.all(cluster.nodes.map((n) => cluster.spawnNode(n)));
      await Promise.all(cluster.nodes.map((n) => cluster.sendPeers(n)));
    } catch (err) {
      await cluster.stop(); // never leave half a cluster running
      throw err;
    }
    return cluster;
  }

  node(id: number): RaftProcess {
    const n = this.nodes.find((x) => x.id === id);
    if (!n) throw new Error(`no node ${id}`);
    return n;
  }

  private async spawnNode(n: RaftProcess): Promise<void> {
    mkdirSync(n.dir, { recursive: true });
    const o = this.options;
    // A port outside the ephemeral range: a restart binds it again, and in between an outgoing
    // connection could otherwise take it.
    if (n.raftPort === 0) n.raftPort = await freePort();
    const argv = [
      nodeProcessScript(),
      "--node-id",
      String(n.id),
      "--data-dir",
      join(n.dir, "data"),
      "--raft-port",
      String(n.raftPort),
      "--groups",
      String(o.groups),
      "--tick-ms",
      String(o.tickMs ?? 50),
      "--election-ticks",
      String(o.electionTicks ?? 30),
      "--heartbeat-ticks",
      String(o.heartbeatTicks ?? 3),
      "--snapshot-entries",
      String(o.snapshotEntries ?? 20_000),
      "--record",
      String(o.record ?? true),
    ];
    // RAFT_NODE_EXEC_ARGV="--cpu-prof --cpu-prof-dir=/tmp/prof" profiles the node processes.
    const execArgv = (process.env.RAFT_NODE_EXEC_ARGV ?? "").split(" ").filter((a) => a.length > 0);
    const child = spawn(process.execPath, [...NODE_PROCESS_FLAGS, ...execArgv, ...argv], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stderr!.pipe(createWriteStream(join(n.dir, "stderr.log"), { flags: "a" }));
    n.child = child;
    const line = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(new Error(`node ${n.id} did not start within ${o.startTimeoutMs ?? 60_000} ms`)),
        o.startTimeoutMs ?? 60_000,
      );
      const rl = createInterface({ input: child.stdout! });
      rl.once("line", (l) => {
        clearTimeout(timer);
        resolve(l);
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(
          new Error(
            `node ${n.id} exited with ${code} before it was ready (see ${n.dir}/stderr.log)`,
          ),
        );
      });
    });
    const ready = JSON.parse(line) as { raftPort: number; controlPort: number };
    n.raftPort = ready.raftPort;
    n.controlPort = ready.controlPort;
  }

  private async sendPeers(n: RaftProcess): Promise<void> {
    const peers: Record<string, string> = {};
    for (const m of this.nodes) if (m.id !== n.id) peers[String(m.id)] = `127.0.0.1:${m.raftPort}`;
    await this.post(n.id, "/peers", peers);
  }

  async get<T = any>(id: number, path: string): Promise<T> {
    const res = await fetch(`http://127.0.0.1:${this.node(id).controlPort}${path}`, {
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    if (!res.ok) throw new Error(`GET ${path} on node ${id}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  }

  async post<T = any>(
    id: number,
    path: string,
    value: unknown,
    timeoutMs = REQUEST_TIMEOUT_MS,
  ): Promise<T> {
    const res = await fetch(`http://127.0.0.1:${this.node(id).controlPort}${path}`, {
      method: "POST",
      body: JSON.stringify(value),
      headers: { "content-type": "application/json" },
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!res.ok) throw new Error(`POST ${path} on node ${id}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  }

  isUp(id: number): boolean {
    const c = this.node(id).child;
    return c !== undefined && c.exitCode === null && c.signalCode === null;
  }

  async status(id: number): Promise<Record<string, GroupStatus>> {
    return (await this.get<{ groups: Record<string, GroupStatus> }>(id, "/status")).groups;
  }

  /** Group id → node id of its leader, from every live node's view (a leader's own claim wins). */
  async leaders(): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (const n of this.nodes) {
      if (!this.isUp(n.id)) continue;
      const s = await this.status(n.id).catch(() => undefined);
      if (!s) continue;
      for (const [g, st] of Object.entries(s)) if (st.isLeader) out.set(g, n.id);
    }
    return out;
  }

  async waitForLeaders(
    groupIds: readonly string[],
    timeoutMs: number,
  ): Promise<Map<string, number>> {
    let leaders = new Map<string, number>();
    await until(
      `leaders of ${groupIds.length} groups`,
      timeoutMs,
      async () => {
        leaders = await this.leaders();
        return groupIds.every((g) => leaders.has(g)) || undefined;
      },
      { intervalMs: 100, fatal: () => true },
    );
    return leaders;
  }

  async kill(id: number): Promise<void> {
    const child = this.node(id).child;
    if (!child || !this.isUp(id)) return;
    const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGKILL");
    await exited;
  }

  async restart(id: number): Promise<void> {
    const n = this.node(id);
    await this.spawnNode(n);
    await this.sendPeers(n);
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => this.kill(n.id)));
  }
}

// A small Raft host process for the integration test and the raft benchmark. It hosts
// `--groups N` groups ("g/0".."g/N-1", voters 1..3) with a RecordingStateMachine each, serves
// the Raft transport on gRPC, and a JSON control API on HTTP (loopback only):
//   POST /peers {"1":"127.0.0.1:p",...}    peer addresses
//   GET  /status                           per group: leader, term, isLeader, applied, count
//   POST /propose {group, payloads[]}      proposes in order, answers which were acknowledged
//   GET  /applied?group=g                  the payloads applied, in order
//   POST /load {groups[], inflight, entryBytes, durationMs}   load generated here, on leaders
//   GET  /cpu?ms=N                         this process's CPU use over N ms
//   GET  /usage                            cumulative CPU ms of this process and its turn counters
//   GET  /profile?ms=N&path=P              a CPU profile of this process over N ms, written to P
// Prints one line {"ready":true,"raftPort":..,"controlPort":..} on stdout when serving.
import { writeFileSync } from "node:fs";
import { Session, type Profiler } from "node:inspector";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { parseArgs } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { isTernError } from "../../../libs/common/errors.js";
import { createLogger } from "../../../libs/common/logger.js";
import { channelOptions } from "../../../libs/raft-host/transport.js";
import { openRaftHost, type RaftHost } from "../../../libs/raft-host/host.js";
import { RecordingStateMachine } from "./raft-recording-state-machine.js";

const BODY_BYTES_MAX = 16 * 1024 * 1024;
const LOAD_DURATION_MS_MAX = 120_000;
const INFLIGHT_MAX = 4_096;
const LATENCY_SAMPLES_MAX = 2_000_000;

const { values: args } = parseArgs({
  options: {
    "node-id": { type: "string" },
    "data-dir": { type: "string" },
    "raft-port": { type: "string", default: "0" },
    groups: { type: "string", default: "50" },
    "tick-ms": { type: "string", default: "50" },
    "election-ticks": { type: "string", default: "30" },
    "heartbeat-ticks": { type: "string", default: "3" },
    "snapshot-entries": { type: "string", default: "20000" },
    record: { type: "string", default: "true" },
  },
});

const nodeId = Number(args["node-id"]);
const groupCount = Number(args.groups);
const record = args.record === "true";
const logger = createLogger({
  component: "raft-node-process",
  nodeId,
  level: process.env.TERN_LOG_LEVEL ?? "warn",
  stderr: true, // stdout carries the ready line
});
const machines = new Map<string, RecordingStateMachine>();

async function main(): Promise<void> {
  const host = await openRaftHost({
    nodeId,
    dataDir: args["data-dir"]!,
    logger,
    tickMs: Number(args["tick-ms"]),
    electionTicks: Number(args["election-ticks"]),
    heartbeatTicks: Number(args["heartbeat-ticks"]),
    limits: {
      snapshotEntriesInterval: Number(args["snapshot-entries"]),
      compactionMarginEntries: Math.min(1000, Number(args["snapshot-entries"])),
    },
  });
  for (let i = 0; i < groupCount; i++) {
    const sm = new RecordingStateMachine(record);
    machines.set(`g/${i}`, sm);
    await host.openGroup({ groupId: `g/${i}`, initialVoters: [1, 2, 3], stateMachine: sm });
  }
  const server = new grpc.Server(channelOptions(host.limits));
  const svc = host.grpcService();
  server.addService(svc.definition, svc.implementation);
  const raftPort = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      `127.0.0.1:${args["raft-port"]}`,
      grpc.ServerCredentials.createInsecure(),
      (err, p) => (err ? reject(err) : resolve(p)),
    ),
  );
  const control = createServer((req, res) => {
    handle(host, req, res).catch((err: Error) => reply(res, 500, { error: err.message }));
  });
  await new Promise<void>((resolve) => control.listen(0, "127.0.0.1", resolve));
  const address = control.address();
  const controlPort = typeof address === "object" && address ? address.port : 0;
  process.stdout.write(
    JSON.stringify({ ready: true, raftPort, controlPort, pid: process.pid }) + "\n",
  );
  process.on("SIGTERM", () => {
    void host
      .transferAllLeaderships(2_000)
      .finally(() => host.close().finally(() => process.exit(0)));
  });
}

async function body(req: IncomingMessage): Promise<unknown> {
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    size += (chunk as Buffer).byteLength;
    if (size > BODY_BYTES_MAX) throw new Error("request body too large");
    chunks.push(chunk as Buffer);
  }
  return chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : {};
}

function reply(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(value));
}

async function handle(host: RaftHost, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? "/", "http://localhost");
  if (req.method === "POST" && url.pathname === "/peers") {
    const peers = (await body(req)) as Record<string, string>;
    for (const [id, address] of Object.entries(peers)) host.setPeerAddress(Number(id), address);
    return reply(res, 200, { ok: true });
  }
  if (url.pathname === "/status") {
    const groups: Record<string, unknown> = {};
    for (const g of host.groups()) {
      groups[g.groupId] = {
        leader: g.leader(),
        term: g.term(),
        isLeader: g.isLeader(),
        applied: g.appliedIndex(),
        count: machines.get(g.groupId)?.count ?? 0,
      };
    }
    return reply(res, 200, { nodeId, groups, turns: host.turnStats });
  }
  if (req.method === "POST" && url.pathname === "/propose") {
    const { group, payloads } = (await body(req)) as { group: string; payloads: string[] };
    return reply(res, 200, await proposeAll(host, group, payloads));
  }
  if (url.pathname === "/applied") {
    const sm = machines.get(url.searchParams.get("group") ?? "");
    if (!sm) return reply(res, 404, { error: "unknown group" });
    return reply(res, 200, { applied: sm.applied, count: sm.count, lastIndex: sm.lastIndex });
  }
  if (req.method === "POST" && url.pathname === "/load") {
    return reply(res, 200, await runLoad(host, (await body(req)) as LoadRequest));
  }
  if (url.pathname === "/profile") {
    // CPU profile of this process over ms, written to path (for benchmark investigations).
    const ms = Math.min(Number(url.searchParams.get("ms") ?? "5000"), LOAD_DURATION_MS_MAX);
    const path = url.searchParams.get("path") ?? `raft-node-${nodeId}.cpuprofile`;
    const session = new Session();
    session.connect();
    const post = (method: string): Promise<unknown> =>
      new Promise((resolve, reject) =>
        session.post(method, (err, r) => (err ? reject(err) : resolve(r))),
      );
    await post("Profiler.enable");
    await post("Profiler.start");
    await new Promise((r) => setTimeout(r, ms));
    const { profile } = (await post("Profiler.stop")) as Profiler.StopReturnType;
    session.disconnect();
    writeFileSync(path, JSON.stringify(profile));
    return reply(res, 200, { path });
  }
  if (url.pathname === "/usage") {
    // Cumulative: the benchmark diffs a reading before and after a load on every process.
    const cpu = process.cpuUsage();
    return reply(res, 200, { cpuMs: (cpu.user + cpu.system) / 1000, turns: host.turnStats });
  }
  if (url.pathname === "/cpu") {
    const ms = Math.min(Number(url.searchParams.get("ms") ?? "10000"), LOAD_DURATION_MS_MAX);
    const start = process.cpuUsage();
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, ms));
    const used = process.cpuUsage(start);
    const elapsedMs = performance.now() - t0;
    return reply(res, 200, {
      cpuPct: ((used.user + used.system) / 1000 / elapsedMs) * 100,
      elapsedMs,
    });
  }
  reply(res, 404, { error: `no route ${req.method} ${url.pathname}` });
}

/** Proposes payloads one after another (all in flight at once); reports each outcome. */
async function proposeAll(
  host: RaftHost,
  groupId: string,
  payloads: string[],
): Promise<{ acked: string[]; failed: Array<{ payload: string; error: string }> }> {
  const group = host.group(groupId);
  if (!group)
    return { acked: [], failed: payloads.map((p) => ({ payload: p, error: "UNKNOWN_GROUP" })) };
  const encoder = new TextEncoder();
  const outcomes = await Promise.allSettled(
    payloads.map((p) => group.propose(encoder.encode(p), { timeoutMs: 5_000 })),
  );
  const acked: string[] = [];
  const failed: Array<{ payload: string; error: string }> = [];
  outcomes.forEach((o, i) => {
    if (o.status === "fulfilled") acked.push(payloads[i]!);
    else
      failed.push({
        payload: payloads[i]!,
        error: isTernError(o.reason) ? o.reason.errorName : String(o.reason),
      });
  });
  return { acked, failed };
}

interface LoadRequest {
  groups: string[];
  inflight: number;
  entryBytes: number;
  durationMs: number;
}

/** Closed-loop load: `inflight` proposals outstanding per group, for durationMs. */
async function runLoad(host: RaftHost, req: LoadRequest): Promise<unknown> {
  const inflight = Math.min(Math.max(1, req.inflight), INFLIGHT_MAX);
  const durationMs = Math.min(req.durationMs, LOAD_DURATION_MS_MAX);
  const data = new Uint8Array(req.entryBytes).fill(0x61);
  const latencies: number[] = [];
  let entries = 0;
  let errors = 0;
  const turnsBefore = { ...host.turnStats };
  const cpuBefore = process.cpuUsage();
  const t0 = performance.now();
  const endMs = t0 + durationMs;
  const worker = async (groupId: string): Promise<void> => {
    const group = host.group(groupId);
    if (!group) return;
    while (performance.now() < endMs) {
      const start = performance.now();
      try {
        await group.propose(data, { timeoutMs: 5_000 });
        entries += 1;
        if (latencies.length < LATENCY_SAMPLES_MAX) latencies.push(performance.now() - start);
      } catch {
        errors += 1;
        await new Promise((r) => setTimeout(r, 10));
      }
    }
  };
  await Promise.all(req.groups.flatMap((g) => Array.from({ length: inflight }, () => worker(g))));
  const elapsedMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpuBefore);
  latencies.sort((a, b) => a - b);
  const pct = (q: number): number =>
    latencies.length
      ? latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!
      : NaN;
  return {
    entries,
    errors,
    elapsedMs,
    bytes: entries * req.entryBytes,
    cpuMs: (cpu.user + cpu.system) / 1000,
    p50Ms: pct(0.5),
    p99Ms: pct(0.99),
    writes: host.turnStats.writes - turnsBefore.writes,
    fsyncs: host.turnStats.fsyncs - turnsBefore.fsyncs,
  };
}

main().catch((err) => {
  logger.fatal({ err }, "raft node process failed");
  process.exit(1);
});

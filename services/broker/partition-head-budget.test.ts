// The journaled heads of a process's partition replicas (entries applied since each group's last
// snapshot, kept in memory) stay within one process-wide budget however many partitions it holds:
// three raft hosts in one process (real gRPC on loopback, real journal and segment files), four
// partitions, a per-group snapshot interval far above what is written, so only the budget can
// make them snapshot. The control run with a budget above the writes shows the heads would grow.
import * as grpc from "@grpc/grpc-js";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, expect, it } from "vitest";
import { isTernError } from "../../libs/common/errors.js";
import { silentLogger } from "../../libs/common/logger.js";
import { until } from "../../libs/common/poll.js";
import { openRaftHost, type RaftHost } from "../../libs/raft-host/host.js";
import { RecordCache } from "../../libs/storage/record-cache.js";
import { encodeEntry, type EntryHeader } from "./partition-entry.js";
import { PartitionStateMachine } from "./partition-state-machine.js";

const PARTITIONS = 4;
const ENTRY_BYTES = 8 * 1024;
const ENTRIES_PER_PARTITION = 96; // 768 KiB per partition, 3 MiB per host
const header: EntryHeader = {
  appendTimeMs: 1_700_000_000_000,
  retentionMs: -1,
  retentionBytes: -1,
  producerExpiryMs: 3_600_000,
};
const root = mkdtempSync(join(tmpdir(), "tern-head-budget-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface Node {
  host: RaftHost;
  server: grpc.Server;
  machines: PartitionStateMachine[];
}
let nodes: Node[] = [];
afterEach(async () => {
  for (const n of nodes) {
    n.server.forceShutdown();
    await n.host.close();
    for (const sm of n.machines) await sm.close();
  }
  nodes = [];
});

async function cluster(name: string, budgetBytes: number): Promise<Node[]> {
  const started: Array<{
    id: number;
    host: RaftHost;
    server: grpc.Server;
    port: number;
    dir: string;
  }> = [];
  for (const id of [1, 2, 3]) {
    const dir = join(root, name, `node-${id}`);
    const limits = {
      journaledHeadBytesMax: budgetBytes,
      snapshotBytesInterval: 64 * 1024 * 1024,
      snapshotEntriesInterval: 100_000,
    };
    const host = await openRaftHost({
      nodeId: id,
      dataDir: dir,
      logger: silentLogger(),
      tickMs: 10,
      electionTicks: 20,
      heartbeatTicks: 2,
      metrics: false,
      limits,
    });
    const server = new grpc.Server();
    const svc = host.grpcService();
    server.addService(svc.definition, svc.implementation);
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) =>
        e ? reject(e) : resolve(p),
      ),
    );
    started.push({ id, host, server, port, dir });
  }
  for (const a of started)
    for (const b of started) if (a.id !== b.id) a.host.setPeerAddress(b.id, `127.0.0.1:${b.port}`);
  for (const s of started) {
    const machines: PartitionStateMachine[] = [];
    for (let p = 0; p < PARTITIONS; p++) {
      const sm = new PartitionStateMachine("hb", p, {
        dir: join(s.dir, "partitions", `hb-${p}`),
        cache: new RecordCache(1024 * 1024),
        segmentBytes: 1024 * 1024,
        segmentMs: -1,
        indexIntervalBytes: 4096,
        readAheadBytes: 64 * 1024,
        initialVoters: [1, 2, 3],
      });
      machines.push(sm);
      await s.host.openGroup({ groupId: `hb/${p}`, initialVoters: [1, 2, 3], stateMachine: sm });
    }
    nodes.push({ host: s.host, server: s.server, machines });
  }
  return nodes;
}

/** Writes to every partition, recording the largest head any host held after each write. */
async function writeAll(hosts: Node[]): Promise<number> {
  let peak = 0;
  for (let i = 0; i < ENTRIES_PER_PARTITION; i++) {
    for (let p = 0; p < PARTITIONS; p++) {
      const data = encodeEntry({
        kind: "batch",
        header,
        producerId: -1n,
        producerEpoch: 0,
        baseSequence: -1,
        isTransactional: false,
        records: [{ key: null, value: Buffer.alloc(ENTRY_BYTES, 1), headers: [], timestampMs: 0 }],
      });
      await until(
        `write hb/${p} #${i}`,
        30_000,
        async () => {
          const leader = hosts.map((n) => n.host.group(`hb/${p}`)).find((g) => g?.isLeader());
          if (!leader) return undefined;
          try {
            await leader.propose(data, { timeoutMs: 5_000 });
            return true;
          } catch (e) {
            if (isTernError(e) && e.retriable) return undefined;
            throw e;
          }
        },
        { intervalMs: 20, fatal: () => true },
      );
      for (const n of hosts) peak = Math.max(peak, n.host.journaledHeadBytes());
    }
  }
  return peak;
}

it("keeps every host's journaled heads within the budget across partitions", async () => {
  const budget = 256 * 1024;
  const peak = await writeAll(await cluster("bounded", budget));
  // The apply that crosses the budget makes the largest heads snapshot before anything else
  // runs, so no host is ever seen past it.
  expect(peak).toBeLessThanOrEqual(budget);
}, 120_000);

it("control: with a budget above what is written the heads grow with the data", async () => {
  const peak = await writeAll(await cluster("unbounded", 64 * 1024 * 1024));
  expect(peak).toBeGreaterThan(2 * 1024 * 1024);
}, 120_000);

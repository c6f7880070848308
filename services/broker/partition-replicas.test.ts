// Three raft hosts in one process (real gRPC on loopback, real level and segment files) holding
// one partition. A follower that was stopped while the leader wrote is caught up by appends the
// leader streams from its segment files (its level copy is compacted, its record cache too small
// to hold them: every entry comes through an asynchronous read-ahead), not by a snapshot, and
// its records read back exactly as the leader's. A follower whose segment files were lost while
// it was down refuses to open the group (it must not rejoin as if it held what the leader
// thinks it holds) while the other two go on.
import * as grpc from "@grpc/grpc-js";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { silentLogger } from "../../libs/common/logger.js";
import { isTernError } from "../../libs/common/errors.js";
import { until } from "../../libs/common/poll.js";
import type { RaftHost } from "../../libs/raft-host/host.js";
import { openRaftHost } from "../../libs/raft-host/host.js";
import { RecordCache } from "../../libs/storage/record-cache.js";
import { encodeEntry, type EntryHeader } from "./partition-entry.js";
import { PartitionStateMachine } from "./partition-state-machine.js";

const GROUP = "rep/0";
const header: EntryHeader = {
  appendTimeMs: 1_700_000_000_000,
  retentionMs: -1,
  retentionBytes: -1,
  producerExpiryMs: 3_600_000,
};
const root = mkdtempSync(join(tmpdir(), "tern-partition-replicas-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

interface Node {
  id: number;
  dir: string;
  port: number;
  host: RaftHost;
  server: grpc.Server;
  sm: PartitionStateMachine;
}
const nodes = new Map<number, Node>();
const ports = new Map<number, number>();

async function start(id: number): Promise<Node> {
  const dir = join(root, `node-${id}`);
  const host = await openRaftHost({
    nodeId: id,
    dataDir: dir,
    logger: silentLogger(),
    tickMs: 10,
    electionTicks: 20,
    heartbeatTicks: 2,
    metrics: false,
    limits: { snapshotEntriesInterval: 20, compactionMarginEntries: 5 },
  });
  const server = new grpc.Server();
  const svc = host.grpcService();
  server.addService(svc.definition, svc.implementation);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(
      `127.0.0.1:${ports.get(id) ?? 0}`,
      grpc.ServerCredentials.createInsecure(),
      (e, p) => (e ? reject(e) : resolve(p)),
    ),
  );
  ports.set(id, port);
  // A 256 KiB cache: the catch-up below (about 1.5 MB) cannot come from it.
  const sm = new PartitionStateMachine("rep", 0, {
    dir: join(dir, "partitions", "rep-0"),
    cache: new RecordCache(256 * 1024),
    segmentBytes: 64 * 1024,
    segmentMs: -1,
    indexIntervalBytes: 4096,
    readAheadBytes: 64 * 1024,
    initialVoters: [1, 2, 3],
  });
  const node: Node = { id, dir, port, host, server, sm };
  nodes.set(id, node);
  for (const n of nodes.values())
    for (const m of nodes.values())
      if (m.id !== n.id) n.host.setPeerAddress(m.id, `127.0.0.1:${m.port}`);
  for (const other of [1, 2, 3])
    if (other !== id && ports.has(other))
      host.setPeerAddress(other, `127.0.0.1:${ports.get(other)}`);
  await host.openGroup({ groupId: GROUP, initialVoters: [1, 2, 3], stateMachine: sm });
  return node;
}

async function stop(id: number): Promise<void> {
  const n = nodes.get(id)!;
  nodes.delete(id);
  n.server.forceShutdown();
  await n.host.close();
  await n.sm.close();
}

/** Probed every 20 ms; an error the probe lets out fails the test at once. */
const FAIL_FAST = { intervalMs: 20, fatal: () => true };

function leader(): Node | undefined {
  return [...nodes.values()].find((n) => n.host.group(GROUP)?.isLeader());
}

let written = 0;
async function write(count: number): Promise<void> {
  for (let i = 0; i < count; i++, written++) {
    const data = encodeEntry({
      kind: "batch",
      header,
      producerId: -1n,
      producerEpoch: 0,
      baseSequence: -1,
      isTransactional: false,
      records: [
        {
          key: null,
          value: Buffer.from(`r${written}-${"p".repeat(1000)}`),
          headers: [],
          timestampMs: 0,
        },
      ],
    });
    await until(
      `write ${written}`,
      30_000,
      async () => {
        const l = leader();
        if (!l) return undefined;
        try {
          await l.host.group(GROUP)!.propose(data, { timeoutMs: 5_000 });
          return true;
        } catch (e) {
          if (isTernError(e) && e.retriable) return undefined;
          throw e;
        }
      },
      FAIL_FAST,
    );
  }
}

async function values(sm: PartitionStateMachine): Promise<string[]> {
  const out: string[] = [];
  let offset = sm.logStartOffset();
  for (let i = 0; i < 10_000; i++) {
    const r = await sm.read(offset, 256 * 1024, "READ_UNCOMMITTED", true);
    expect(r.error).toBe("NONE");
    if (r.batches.length === 0) break;
    for (const b of r.batches)
      for (const x of b.records) out.push(Buffer.from(x.value!).toString().split("-")[0]!);
    offset = r.nextFetchOffset;
  }
  return out;
}

async function caughtUp(id: number): Promise<void> {
  await until(
    `node ${id} caught up`,
    60_000,
    () => (nodes.get(id)!.sm.highWatermark() === BigInt(written) ? true : undefined),
    FAIL_FAST,
  );
  expect(await values(nodes.get(id)!.sm)).toEqual(
    Array.from({ length: written }, (_, i) => `r${i}`),
  );
}

it("catches a stopped follower up from the leader's segments; one that lost its files refuses to open", async () => {
  for (const id of [1, 2, 3]) await start(id);
  await write(100);
  const follower = [1, 2, 3].find((id) => id !== leader()!.id)!;
  await caughtUp(follower);
  await stop(follower);
  await write(1_500);
  const l = leader()!;
  // The leader's level copy is compacted far past what the follower has.
  expect(l.host.group(GROUP)!.firstIndex()).toBeGreaterThan(1_000);
  await start(follower);
  await caughtUp(follower);
  // Streamed from segments: the follower's own log still starts at 1 (no snapshot installed).
  expect(nodes.get(follower)!.sm.appliedLog.firstIndex()).toBe(1);

  await stop(follower);
  for (const f of readdirSync(join(root, `node-${follower}`, "partitions", "rep-0")))
    rmSync(join(root, `node-${follower}`, "partitions", "rep-0", f));
  await write(50);
  await expect(start(follower)).rejects.toThrow(
    /the applied log ends at 0, before the applied index/,
  );
  await write(10);
  for (const id of [1, 2, 3]) if (id !== follower) await caughtUp(id);
  const failed = nodes.get(follower);
  if (failed) {
    nodes.delete(follower);
    failed.server.forceShutdown();
    await failed.host.close();
  }
  for (const id of [...nodes.keys()]) await stop(id);
}, 180_000);

// A partition on a real single-node raft host, snapshotting every 10 entries: after a close
// and reopen from the same directory the state machine is rebuilt from snapshot + log tail,
// identical to the state before (records, producers, open transaction, aborted index). The
// snapshot holds no records: they stay in the partition's segment files, while the host
// compacts its own copy of the entries. While producing, a partition's writes are entry-journal
// appends alone: its commit-only hard states ride along with a later level batch.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { until } from "../../libs/common/poll.js";
import { silentLogger } from "../../libs/common/logger.js";
import { openRaftHost } from "../../libs/raft-host/host.js";
import type { RaftGroup } from "../../libs/raft-host/api.js";
import { encodeEntry, type EntryHeader } from "./partition-entry.js";
import type { PartitionStateMachine } from "./partition-state-machine.js";
import { partitionForTest } from "./testing/partition-for-test.js";

const dir = mkdtempSync(join(tmpdir(), "tern-partition-restart-"));
const logger = silentLogger();
const header: EntryHeader = {
  appendTimeMs: 1_700_000_000_000,
  retentionMs: -1,
  retentionBytes: -1,
  producerExpiryMs: 3_600_000,
};
const segments = join(dir, "partitions", "r-0");

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A single-node Raft host on dataDir with this file's fast ticks. */
function openHost(dataDir: string, limits?: Parameters<typeof openRaftHost>[0]["limits"]) {
  return openRaftHost({
    nodeId: 0,
    dataDir,
    logger,
    tickMs: 10,
    electionTicks: 10,
    heartbeatTicks: 2,
    metrics: false,
    ...(limits ? { limits } : {}),
  });
}

/** Producer 7's idempotent batch of one record, value `v<sequence>`. */
function producer7Batch(sequence: number): Uint8Array {
  return encodeEntry({
    kind: "batch",
    header,
    producerId: 7n,
    producerEpoch: 0,
    baseSequence: sequence,
    isTransactional: false,
    records: [{ key: null, value: Buffer.from(`v${sequence}`), headers: [], timestampMs: 0 }],
  });
}

async function open(): Promise<{
  close: () => Promise<void>;
  group: RaftGroup;
  sm: PartitionStateMachine;
}> {
  const host = await openHost(dir, { snapshotEntriesInterval: 10, compactionMarginEntries: 2 });
  const sm = partitionForTest("r", 0, segments, 2048);
  const group = await host.openGroup({ groupId: "r/0", initialVoters: [0], stateMachine: sm });
  await until("leader of r/0", 20_000, () => group.isLeader() || undefined, { intervalMs: 20 });
  return { close: () => host.close(), group, sm };
}

it("rebuilds the partition from snapshot + tail after a restart", async () => {
  const a = await open();
  for (let i = 0; i < 45; i++) await a.group.propose(producer7Batch(i));
  await a.group.propose(
    encodeEntry({
      kind: "batch",
      header,
      producerId: 8n,
      producerEpoch: 0,
      baseSequence: 0,
      isTransactional: true,
      records: [{ key: null, value: Buffer.from("x"), headers: [], timestampMs: 0 }],
    }),
  );
  await a.group.propose(
    encodeEntry({
      kind: "marker",
      header,
      producerId: 8n,
      producerEpoch: 0,
      controlType: "ABORT",
      coordinatorEpoch: 1,
      epochBumped: false,
    }),
  );
  await a.group.propose(
    encodeEntry({
      kind: "batch",
      header,
      producerId: 9n,
      producerEpoch: 0,
      baseSequence: 0,
      isTransactional: true,
      records: [{ key: null, value: Buffer.from("open") }].map((r) => ({
        ...r,
        headers: [],
        timestampMs: 0,
      })),
    }),
  );
  const before = {
    snapshot: Buffer.from(a.sm.snapshot()),
    hw: a.sm.highWatermark(),
    lso: a.sm.lastStableOffset(),
    start: a.sm.logStartOffset(),
  };
  const records = await a.sm.read(before.start, 1 << 20, "READ_UNCOMMITTED", true);
  expect(before.start).toBe(0n);
  expect(records.batches.length).toBe(47);
  // The host really compacted its copy; the records are in several segments.
  expect(a.group.firstIndex()).toBeGreaterThan(10);
  expect(a.sm.segmentCount()).toBeGreaterThan(3);
  await a.close();

  const b = await open();
  await until(
    "the high watermark of before the restart",
    20_000,
    () => b.sm.highWatermark() >= before.hw || undefined,
    { intervalMs: 20 },
  );
  expect(b.sm.highWatermark()).toBe(before.hw);
  expect(b.sm.lastStableOffset()).toBe(before.lso);
  expect(Buffer.from(b.sm.snapshot()).equals(before.snapshot)).toBe(true);
  expect(await b.sm.read(before.start, 1 << 20, "READ_UNCOMMITTED", true)).toEqual(records);
  const dup = await b.group.propose<{ duplicate: boolean; baseOffset: bigint }>(producer7Batch(44));
  expect(dup.result).toMatchObject({ duplicate: true, baseOffset: 44n });
  await b.close();
}, 60_000);

it("appends to the entry journal alone while producing: no level batch per write", async () => {
  const own = mkdtempSync(join(tmpdir(), "tern-partition-journal-only-"));
  try {
    const host = await openHost(own);
    const sm = partitionForTest("j", 0, join(own, "partitions", "j-0"), 2048);
    const group = await host.openGroup({ groupId: "j/0", initialVoters: [0], stateMachine: sm });
    await until("leader of j/0", 20_000, () => group.isLeader() || undefined, { intervalMs: 20 });
    await until("startup writes landed", 20_000, () => host.turnStats.writes > 0 || undefined);
    const before = { ...host.turnStats };
    for (let i = 0; i < 20; i++) await group.propose(producer7Batch(i));
    // Each entry was made durable by a journal write; the commit indexes were carried, not written.
    expect(host.turnStats.fsyncs - before.fsyncs).toBeGreaterThanOrEqual(20);
    expect(host.turnStats.opsWritten - before.opsWritten).toBe(0);
    const hw = sm.highWatermark();
    await host.close();
    const again = await openHost(own);
    const sm2 = partitionForTest("j", 0, join(own, "partitions", "j-0"), 2048);
    await again.openGroup({ groupId: "j/0", initialVoters: [0], stateMachine: sm2 });
    await until("high watermark back", 20_000, () => sm2.highWatermark() >= hw || undefined, {
      intervalMs: 20,
    });
    expect(sm2.highWatermark()).toBe(hw);
    await again.close();
  } finally {
    rmSync(own, { recursive: true, force: true });
  }
}, 60_000);

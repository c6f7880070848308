// A partition on a real single-node raft host whose segment files are cut or corrupted while
// the process is down, at many points after its last snapshot (the part not yet synced): on
// reopen the torn records are dropped, the host applies those entries again from its own log,
// and every record reads back as written; nothing corrupt is served.
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync, cpSync } from "node:fs";
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

const root = mkdtempSync(join(tmpdir(), "tern-torn-tail-"));
const logger = silentLogger();
const header: EntryHeader = {
  appendTimeMs: 1_700_000_000_000,
  retentionMs: -1,
  retentionBytes: -1,
  producerExpiryMs: 3_600_000,
};
const ENTRIES = 57;

afterAll(() => rmSync(root, { recursive: true, force: true }));

async function open(
  dir: string,
): Promise<{ close: () => Promise<void>; group: RaftGroup; sm: PartitionStateMachine }> {
  // A snapshot every 50 entries: the last one is at 50, entries 51..57 are only in level and
  // in the (unsynced) segment tail.
  const host = await openRaftHost({
    nodeId: 0,
    dataDir: dir,
    logger,
    tickMs: 10,
    electionTicks: 10,
    heartbeatTicks: 2,
    metrics: false,
    limits: { snapshotEntriesInterval: 50, compactionMarginEntries: 2 },
  });
  const sm = partitionForTest("r", 0, join(dir, "partitions", "r-0"), 1024 * 1024);
  const group = await host.openGroup({ groupId: "r/0", initialVoters: [0], stateMachine: sm });
  await until("leader of r/0", 20_000, () => group.isLeader() || undefined, { intervalMs: 20 });
  return {
    close: async () => {
      await host.close();
      await sm.close();
    },
    group,
    sm,
  };
}

function value(i: number): string {
  return `value-${i}-${"x".repeat(i * 7)}`;
}

async function readValues(sm: PartitionStateMachine): Promise<string[]> {
  const r = await sm.read(0n, 1 << 24, "READ_UNCOMMITTED", true);
  expect(r.error).toBe("NONE");
  return r.batches.flatMap((b) => b.records.map((x) => Buffer.from(x.value!).toString()));
}

it("drops a torn or corrupt segment tail on open and applies those entries again", async () => {
  const pristine = join(root, "pristine");
  const a = await open(pristine);
  for (let i = 0; i < ENTRIES; i++) {
    await a.group.propose(
      encodeEntry({
        kind: "batch",
        header,
        producerId: -1n,
        producerEpoch: 0,
        baseSequence: -1,
        isTransactional: false,
        records: [{ key: null, value: Buffer.from(value(i)), headers: [], timestampMs: 0 }],
      }),
    );
  }
  const expected = Array.from({ length: ENTRIES }, (_, i) => value(i));
  expect(await readValues(a.sm)).toEqual(expected);
  await a.close();
  const segDir = join(pristine, "partitions", "r-0");
  const logFile = readdirSync(segDir).find((f) => f.endsWith(".log"))!;
  const original = readFileSync(join(segDir, logFile));
  // Positions of the last 6 records (all after the snapshot at 50).
  const ends: number[] = [];
  for (let at = 0; at < original.byteLength;) ends.push((at += 4 + original.readUInt32BE(at)));
  const damagedFrom = ends[ends.length - 7]!;
  for (let k = 0; k < 12; k++) {
    const dir = join(root, `case-${k}`);
    cpSync(pristine, dir, { recursive: true });
    const point = damagedFrom + Math.floor(((original.byteLength - damagedFrom) * k) / 12);
    const damaged = Buffer.from(original);
    if (k % 2 === 0)
      writeFileSync(join(dir, "partitions", "r-0", logFile), damaged.subarray(0, point));
    else {
      damaged[point] ^= 0xa5;
      writeFileSync(join(dir, "partitions", "r-0", logFile), damaged);
    }
    const b = await open(dir);
    const deadline = Date.now() + 20_000;
    while (b.sm.highWatermark() < BigInt(ENTRIES) && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    // A cut on a record boundary leaves nothing torn: only fewer records.
    expect(b.sm.openReport().repairs.length, `case ${k}`).toBe(
      k % 2 === 0 && ends.includes(point) ? 0 : 1,
    );
    expect(await readValues(b.sm), `case ${k} at ${point}`).toEqual(expected);
    await b.close();
  }
}, 120_000);

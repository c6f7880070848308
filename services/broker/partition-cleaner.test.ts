// The broker's cleaner choosing among real partition replicas: only compacted topics, the
// dirtiest first, nothing below min.cleanable.dirty.ratio unless past max.compaction.lag.ms, and
// its counters (what the metrics read).
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../libs/common/logger.js";
import type { RaftGroup } from "../../libs/raft-host/api.js";
import { EntryType } from "../../libs/raft/types.js";
import { buildBatch } from "../../libs/records/batch-builder.js";
import { ManualClock } from "../../libs/runtime/testing/manual-clock.js";
import { LocalPartition } from "./local-partition.js";
import { PartitionCleaner } from "./partition-cleaner.js";
import { encodeEntry, kafkaBatchEntry } from "./partition-entry.js";
import { partitionForTest } from "./testing/partition-for-test.js";

const T0 = 1_700_000_000_000;

class Replica {
  // The cleaner reads the state machine and the config only, never the Raft group.
  readonly local: LocalPartition;
  private index = 0;
  private seq = 0;
  clock = T0;
  constructor(topic: string, config: Record<string, string>) {
    const sm = partitionForTest(topic, 0, undefined, 2048);
    sm.appliedLog.openAt(0);
    this.local = new LocalPartition(topic, 0, undefined as unknown as RaftGroup, sm);
    this.local.setConfig(config);
  }
  /** n records over `keys` keys, one per batch. */
  async write(n: number, keys: number): Promise<void> {
    for (let i = 0; i < n; i++) {
      const batch = await buildBatch({
        producerId: -1n,
        producerEpoch: -1,
        baseSequence: -1,
        isTransactional: false,
        codec: "none",
        records: [
          {
            key: Buffer.from(`k${this.seq % keys}`),
            value: Buffer.from(`v${this.seq}`),
            headers: [],
            timestampMs: this.clock,
          },
        ],
      });
      this.seq++;
      this.clock += 10;
      const data = encodeEntry(kafkaBatchEntry(this.local.entryHeader(this.clock), batch));
      this.local.stateMachine.apply({ index: ++this.index, term: 1, data, type: EntryType.Normal });
    }
  }
}

function cleanerOf(replicas: Replica[]): PartitionCleaner {
  return new PartitionCleaner({
    partitions: () => replicas.map((r) => r.local),
    logger: silentLogger(),
    clock: new ManualClock(),
    mapBytes: 1024 * 1024,
    ioBytesPerSecond: 0,
    backoffMs: 1000,
    indexIntervalBytes: 4096,
  });
}

const SEGMENTS = { "segment.bytes": "2048" };
const COMPACT = { ...SEGMENTS, "cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.5" };

describe("PartitionCleaner", () => {
  it("cleans compacted replicas only, dirtiest first, and none below the ratio until overdue", async () => {
    const a = new Replica("a", COMPACT);
    const b = new Replica("b", COMPACT);
    const plain = new Replica("plain", SEGMENTS);
    await a.write(200, 5);
    await plain.write(200, 5);
    const cleaner = cleanerOf([plain, a, b]);
    // a: everything dirty. The plain topic is never cleaned.
    expect(await cleaner.cleanOnce()).toMatchObject({ kind: "cleaned" });
    expect(cleaner.stats.cleans).toBe(1);
    expect(await cleaner.cleanOnce()).toBeUndefined();

    // a gets a little more (a low ratio), b a lot (all dirty): b first, then none.
    await a.write(30, 5);
    await b.write(200, 5);
    const viewA = a.local.stateMachine;
    const cleanedB = await cleaner.cleanOnce();
    expect(cleanedB).toMatchObject({ kind: "cleaned", firstOffset: 0n });
    expect(b.local.stateMachine.highWatermark()).toBe(200n);
    expect(await cleaner.cleanOnce()).toBeUndefined();
    expect(viewA.highWatermark()).toBe(230n);

    // Past max.compaction.lag.ms, a is due whatever its ratio.
    a.local.setConfig({ ...COMPACT, "max.compaction.lag.ms": "100" });
    await a.write(1, 5);
    const overdue = await cleaner.cleanOnce();
    expect(overdue).toMatchObject({ kind: "cleaned" });
    expect(cleaner.stats.cleans).toBe(3);
    expect(cleaner.stats.bytesRead).toBeGreaterThan(0);
    expect(cleaner.stats.bytesWritten).toBeGreaterThan(0);
    expect(cleaner.stats.mapUtilisation).toBeGreaterThan(0);
    expect(cleaner.maxDirtyAgeMs()).toBe(0);
    await cleaner.close();
  });
});

// A segment's checkpoint is the state just before its first entry: a replica that installs it
// (a follower behind the leader's oldest segment) and then applies that segment's entries must
// give every entry the offsets the leader gave it. A checkpoint taken after the first entry was
// applied carried that entry's producer sequence: the follower refused the entry as a duplicate
// and every later offset moved (found by broker-snapshot.test.ts).
import { expect, it } from "vitest";
import { EntryType } from "../../libs/raft/types.js";
import { restoreFromSnapshot } from "../../libs/raft-host/host-group.js";
import { encodeEntry, type EntryHeader } from "./partition-entry.js";
import { partitionForTest } from "./testing/partition-for-test.js";

// Retention keeps about 3 KB: the oldest segments go, and the leader's oldest checkpoint is
// what a follower behind it installs.
const header: EntryHeader = {
  appendTimeMs: 1_700_000_000_000,
  retentionMs: -1,
  retentionBytes: 3_000,
  producerExpiryMs: 3_600_000,
};

it("a follower installing the oldest segment's checkpoint applies the entries after it with the leader's offsets", async () => {
  const leader = partitionForTest("c", 0, undefined, 1_024);
  leader.appliedLog.openAt(0);
  const offsets: bigint[] = [];
  const entries: Uint8Array[] = [];
  for (let i = 0; i < 40; i++) {
    const data = encodeEntry({
      kind: "batch",
      header,
      producerId: 7n,
      producerEpoch: 0,
      baseSequence: i * 2,
      isTransactional: false,
      records: [0, 1].map((k) => ({
        key: null,
        value: Buffer.from(`v${i}-${k}-${"x".repeat(100)}`),
        headers: [],
        timestampMs: 0,
      })),
    });
    entries.push(data);
    const r = leader.apply({ index: i + 1, term: 1, data, type: EntryType.Normal });
    expect(r.error).toBe("NONE");
    offsets.push(r.baseOffset);
  }
  const snap = leader.appliedLog.snapshotBeforeFirst();
  const c = snap.metadata.index;
  expect(c).toBeGreaterThan(5); // retention removed segments
  const follower = partitionForTest("c", 0);
  follower.appliedLog.openAt(0);
  restoreFromSnapshot(follower, snap.data, c, {
    term: snap.metadata.term,
    confState: snap.metadata.confState,
  });
  for (let i = c; i < entries.length; i++) {
    const r = follower.apply({ index: i + 1, term: 1, data: entries[i]!, type: EntryType.Normal });
    expect(r.duplicate, `entry ${i + 1} after the checkpoint at ${c}`).toBe(false);
    expect(r.baseOffset, `entry ${i + 1} after the checkpoint at ${c}`).toBe(offsets[i]);
  }
  await follower.close();
  await leader.close();
});

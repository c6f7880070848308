import { describe, expect, it } from "vitest";
import { SeededRandom } from "../../libs/common/prng.js";
import { encodeEntry, type OffsetCommitItem, type OffsetsEntry } from "./offsets-codec.js";
import { OFFSETS_LIMITS } from "./offsets-limits.js";
import { OffsetsStateMachine, type OffsetsApplyResult } from "./offsets-state-machine.js";

// A tiny driver: feeds entries with increasing indexes, as the Raft host would.
class Driver {
  readonly sm = new OffsetsStateMachine();
  index = 0;
  apply(entry: OffsetsEntry): OffsetsApplyResult {
    this.index++;
    return this.sm.apply({ index: this.index, term: 1, data: encodeEntry(entry) });
  }
  commit(
    groupId: string,
    offsets: OffsetCommitItem[],
    extra: Partial<{ generationId: number; timestampMs: number }> = {},
  ): OffsetsApplyResult {
    return this.apply({
      type: "commit",
      groupId,
      generationId: extra.generationId ?? -1,
      memberId: "",
      groupInstanceId: "",
      timestampMs: extra.timestampMs ?? 1000,
      offsets,
    });
  }
  txnCommit(
    groupId: string,
    producerId: bigint,
    producerEpoch: number,
    offsets: OffsetCommitItem[],
    extra: Partial<{ transactionalId: string; generationId: number; timestampMs: number }> = {},
  ): OffsetsApplyResult {
    return this.apply({
      type: "txn-commit",
      transactionalId: extra.transactionalId ?? "tx",
      groupId,
      producerId,
      producerEpoch,
      generationId: extra.generationId ?? -1,
      memberId: "",
      groupInstanceId: "",
      timestampMs: extra.timestampMs ?? 2000,
      offsets,
    });
  }
  marker(
    producerId: bigint,
    producerEpoch: number,
    committed: boolean,
    coordinatorEpoch: number,
    timestampMs = 3000,
  ): OffsetsApplyResult {
    return this.apply({
      type: "marker",
      producerId,
      producerEpoch,
      committed,
      coordinatorEpoch,
      timestampMs,
    });
  }
  offset(groupId: string, topic: string, partition: number, requireStable = false) {
    const [fetched] = this.sm.fetchOffsets(groupId, [{ topic, partition }], requireStable);
    return fetched!;
  }
}

function item(
  topic: string,
  partition: number,
  offset: bigint,
  metadata = "",
  leaderEpoch = -1,
): OffsetCommitItem {
  return { topic, partition, offset, leaderEpoch, metadata };
}

function errors(result: OffsetsApplyResult): string[] {
  if (result.type !== "commit") throw new Error(`expected a commit result, got ${result.type}`);
  return result.error === "NONE" ? result.partitions.map((p) => p.error) : [result.error];
}

describe("OffsetsStateMachine: simple commits", () => {
  it("stores, overwrites and returns offsets with metadata, leader epoch and the entry's time", () => {
    const d = new Driver();
    expect(
      errors(d.commit("g", [item("t", 0, 5n, "meta", 3), item("t", 1, 7n)], { timestampMs: 111 })),
    ).toEqual(["NONE", "NONE"]);
    expect(d.offset("g", "t", 0)).toMatchObject({
      offset: 5n,
      metadata: "meta",
      leaderEpoch: 3,
      commitTimestampMs: 111,
      error: "NONE",
    });
    d.commit("g", [item("t", 0, 9n)], { timestampMs: 222 });
    expect(d.offset("g", "t", 0)).toMatchObject({
      offset: 9n,
      metadata: "",
      leaderEpoch: -1,
      commitTimestampMs: 222,
    });
    expect(d.offset("g", "t", 1).offset).toBe(7n);
    expect(d.offset("other", "t", 0)).toMatchObject({
      offset: -1n,
      commitTimestampMs: -1,
      error: "NONE",
    });
    expect(d.offset("g", "t", 2).offset).toBe(-1n);
    expect(
      d.sm.fetchOffsets("g", undefined, false).map((o) => [o.topic, o.partition, o.offset]),
    ).toEqual([
      ["t", 0, 9n],
      ["t", 1, 7n],
    ]);
    expect(d.sm.stats()).toMatchObject({ groups: 1, committedOffsets: 2 });
  });

  it("refuses whole requests with a bad group id, generation or size, storing nothing", () => {
    const d = new Driver();
    expect(errors(d.commit("", [item("t", 0, 1n)]))).toEqual(["INVALID_GROUP_ID"]);
    expect(
      errors(d.commit("x".repeat(OFFSETS_LIMITS.groupIdCharsMax + 1), [item("t", 0, 1n)])),
    ).toEqual(["INVALID_GROUP_ID"]);
    expect(errors(d.commit("g", [item("t", 0, 1n)], { generationId: 1 }))).toEqual([
      "ILLEGAL_GENERATION",
    ]);
    expect(errors(d.commit("g", [item("t", 0, 1n)], { generationId: -2 }))).toEqual([
      "ILLEGAL_GENERATION",
    ]);
    const many = Array.from({ length: OFFSETS_LIMITS.partitionsPerRequestMax + 1 }, (_, i) =>
      item("t", i, 1n),
    );
    expect(errors(d.commit("g", many))).toEqual(["INVALID_REQUEST"]);
    expect(d.sm.stats().committedOffsets).toBe(0);
  });

  it("accepts generation 0 with an empty member id as a simple group (proto3 unset), not with a member id", () => {
    const d = new Driver();
    expect(errors(d.commit("g", [item("t", 0, 1n)], { generationId: 0 }))).toEqual(["NONE"]);
    expect(
      errors(
        d.apply({
          type: "commit",
          groupId: "g",
          generationId: 0,
          memberId: "m-1",
          groupInstanceId: "",
          timestampMs: 1,
          offsets: [item("t", 0, 2n)],
        }),
      ),
    ).toEqual(["ILLEGAL_GENERATION"]);
    expect(d.offset("g", "t", 0).offset).toBe(1n);
  });

  it("refuses bad partitions one by one and stores the good ones", () => {
    const d = new Driver();
    const result = d.commit("g", [
      item("t", 0, -1n),
      item("", 1, 1n),
      item("x".repeat(250), 1, 1n),
      item("t", -1, 1n),
      item("t", 2, 1n, "", -2),
      item("t", 3, 1n, "€".repeat(1366)), // 4098 bytes
      item("t", 4, 1n, "€".repeat(1365) + "a"), // 4096 bytes: at the limit
      item("t", 5, 1n),
      item("t", 5, 2n),
    ]);
    expect(errors(result)).toEqual([
      "INVALID_REQUEST",
      "INVALID_TOPIC_EXCEPTION",
      "INVALID_TOPIC_EXCEPTION",
      "UNKNOWN_TOPIC_OR_PARTITION",
      "INVALID_REQUEST",
      "INVALID_REQUEST",
      "NONE",
      "NONE",
      "INVALID_REQUEST",
    ]);
    expect(d.offset("g", "t", 0).offset).toBe(-1n);
    expect(d.offset("g", "t", 4).offset).toBe(1n);
    expect(d.offset("g", "t", 5).offset).toBe(1n);
    expect(d.sm.stats().committedOffsets).toBe(2);
  });

  it("treats empty entries as no-ops and undecodable ones as refusals without changing state", () => {
    const d = new Driver();
    d.commit("g", [item("t", 0, 1n)]);
    const before = d.sm.snapshot();
    expect(d.sm.apply({ index: ++d.index, term: 1, data: new Uint8Array() })).toEqual({
      type: "noop",
    });
    expect(
      d.sm.apply({ index: ++d.index, term: 1, data: Uint8Array.from([1, 0x7b]) }),
    ).toMatchObject({ type: "invalid", error: "INVALID_REQUEST" });
    const after = JSON.parse(new TextDecoder().decode(d.sm.snapshot()));
    expect({ ...after, lastApplied: 0 }).toEqual({
      ...JSON.parse(new TextDecoder().decode(before)),
      lastApplied: 0,
    });
  });

  it("asserts that indexes increase", () => {
    const d = new Driver();
    d.commit("g", [item("t", 0, 1n)]);
    expect(() => d.sm.apply({ index: d.index, term: 1, data: new Uint8Array() })).toThrow(
      /applied after/,
    );
  });
});

describe("OffsetsStateMachine: transactional commits", () => {
  it("keeps transactional offsets invisible until a COMMIT marker, then applies them", () => {
    const d = new Driver();
    d.commit("g", [item("t", 0, 3n)]);
    expect(
      errors(
        d.txnCommit("g", 100n, 0, [item("t", 0, 10n), item("t", 1, 20n)], { timestampMs: 4242 }),
      ),
    ).toEqual(["NONE", "NONE"]);
    expect(d.offset("g", "t", 0)).toMatchObject({ offset: 3n, error: "NONE" });
    expect(d.offset("g", "t", 1)).toMatchObject({ offset: -1n, error: "NONE" });
    expect(d.offset("g", "t", 0, true)).toMatchObject({
      offset: -1n,
      error: "UNSTABLE_OFFSET_COMMIT",
    });
    expect(d.offset("g", "t", 1, true).error).toBe("UNSTABLE_OFFSET_COMMIT");
    expect(d.offset("g", "t", 2, true).error).toBe("NONE");
    expect(d.offset("other", "t", 0, true).error).toBe("NONE");
    expect(d.sm.pendingTransactions()).toEqual([
      {
        producerId: 100n,
        producerEpoch: 0,
        transactionalId: "tx",
        groups: ["g"],
        offsetCount: 2,
        startedMs: 4242,
      },
    ]);
    expect(d.marker(100n, 0, true, 5)).toEqual({
      type: "marker",
      error: "NONE",
      message: "",
      resolvedOffsets: 2,
    });
    expect(d.offset("g", "t", 0, true)).toMatchObject({
      offset: 10n,
      error: "NONE",
      commitTimestampMs: 4242,
    });
    expect(d.offset("g", "t", 1, true)).toMatchObject({ offset: 20n, error: "NONE" });
    expect(d.sm.pendingTransactions()).toEqual([]);
  });

  it("drops transactional offsets on an ABORT marker, keeping the earlier committed ones", () => {
    const d = new Driver();
    d.commit("g", [item("t", 0, 3n)]);
    d.txnCommit("g", 100n, 0, [item("t", 0, 10n), item("t", 1, 20n)]);
    expect(d.marker(100n, 0, false, 5)).toMatchObject({ error: "NONE", resolvedOffsets: 2 });
    expect(d.offset("g", "t", 0, true)).toMatchObject({ offset: 3n, error: "NONE" });
    expect(d.offset("g", "t", 1, true)).toMatchObject({ offset: -1n, error: "NONE" });
  });

  it("answers a retried marker with NONE and changes nothing", () => {
    const d = new Driver();
    d.txnCommit("g", 100n, 0, [item("t", 0, 10n)]);
    d.marker(100n, 0, true, 5);
    d.commit("g", [item("t", 0, 11n)]);
    expect(d.marker(100n, 0, true, 5)).toMatchObject({ error: "NONE", resolvedOffsets: 0 });
    expect(d.marker(100n, 0, false, 5)).toMatchObject({ error: "NONE", resolvedOffsets: 0 });
    expect(d.offset("g", "t", 0).offset).toBe(11n);
  });

  it("lets the offset written later in the log win when a marker lands", () => {
    const d = new Driver();
    d.txnCommit("g", 100n, 0, [item("t", 0, 10n)]);
    d.commit("g", [item("t", 0, 50n)]); // later than the transactional one
    d.marker(100n, 0, true, 1);
    expect(d.offset("g", "t", 0).offset).toBe(50n);
    d.commit("g", [item("t", 1, 50n)]);
    d.txnCommit("g", 100n, 1, [item("t", 1, 60n)]); // later than the plain one
    d.marker(100n, 1, true, 1);
    expect(d.offset("g", "t", 1).offset).toBe(60n);
  });

  it("shows pending partitions in a fetch-all only with require_stable", () => {
    const d = new Driver();
    d.commit("g", [item("a", 0, 1n)]);
    d.txnCommit("g", 1n, 0, [item("a", 0, 2n), item("b", 3, 4n)]);
    expect(
      d.sm
        .fetchOffsets("g", undefined, false)
        .map((o) => [o.topic, o.partition, o.offset, o.error]),
    ).toEqual([["a", 0, 1n, "NONE"]]);
    expect(
      d.sm.fetchOffsets("g", undefined, true).map((o) => [o.topic, o.partition, o.error]),
    ).toEqual([
      ["a", 0, "UNSTABLE_OFFSET_COMMIT"],
      ["b", 3, "UNSTABLE_OFFSET_COMMIT"],
    ]);
  });

  it("keeps producers apart: one producer's marker resolves only its own offsets", () => {
    const d = new Driver();
    d.txnCommit("g", 1n, 0, [item("t", 0, 10n)]);
    d.txnCommit("g", 2n, 0, [item("t", 0, 20n)], { transactionalId: "other" });
    d.marker(1n, 0, true, 1);
    expect(d.offset("g", "t", 0)).toMatchObject({ offset: 10n, error: "NONE" });
    expect(d.offset("g", "t", 0, true).error).toBe("UNSTABLE_OFFSET_COMMIT");
    d.marker(2n, 0, false, 1);
    expect(d.offset("g", "t", 0, true)).toMatchObject({ offset: 10n, error: "NONE" });
  });

  it("spans several groups in one transaction", () => {
    const d = new Driver();
    d.txnCommit("g1", 1n, 0, [item("t", 0, 10n)]);
    d.txnCommit("g2", 1n, 0, [item("t", 0, 20n)]);
    expect(d.marker(1n, 0, true, 1)).toMatchObject({ resolvedOffsets: 2 });
    expect(d.offset("g1", "t", 0).offset).toBe(10n);
    expect(d.offset("g2", "t", 0).offset).toBe(20n);
  });

  it("fences an older producer epoch with PRODUCER_FENCED, also after an epoch-bumping marker", () => {
    const d = new Driver();
    d.txnCommit("g", 1n, 5, [item("t", 0, 10n)]);
    expect(errors(d.txnCommit("g", 1n, 4, [item("t", 0, 99n)]))).toEqual(["PRODUCER_FENCED"]);
    // Transactions V2: the coordinator writes the marker with the bumped epoch 6.
    d.marker(1n, 6, true, 1);
    expect(errors(d.txnCommit("g", 1n, 5, [item("t", 0, 99n)]))).toEqual(["PRODUCER_FENCED"]);
    expect(errors(d.txnCommit("g", 1n, 6, [item("t", 0, 11n)]))).toEqual(["NONE"]);
    expect(d.sm.producerEpochs(1n)).toEqual({ producerEpoch: 6, coordinatorEpoch: 1 });
    d.marker(1n, 7, true, 1);
    expect(d.offset("g", "t", 0).offset).toBe(11n);
  });

  it("refuses markers from an older coordinator epoch or for an older producer epoch, leaving pending offsets", () => {
    const d = new Driver();
    d.txnCommit("g", 1n, 2, [item("t", 0, 10n)]);
    d.marker(1n, 2, false, 7); // ends a first transaction at coordinator epoch 7
    d.txnCommit("g", 1n, 3, [item("t", 0, 20n)]);
    expect(d.marker(1n, 3, true, 6)).toMatchObject({
      error: "TRANSACTION_COORDINATOR_FENCED",
      resolvedOffsets: 0,
    });
    expect(d.marker(1n, 2, true, 7)).toMatchObject({
      error: "INVALID_PRODUCER_EPOCH",
      resolvedOffsets: 0,
    });
    expect(d.offset("g", "t", 0, true).error).toBe("UNSTABLE_OFFSET_COMMIT");
    expect(d.marker(1n, 3, true, 8)).toMatchObject({ error: "NONE", resolvedOffsets: 1 });
    expect(d.offset("g", "t", 0, true)).toMatchObject({ offset: 20n, error: "NONE" });
    expect(d.marker(-1n, 0, true, 8)).toMatchObject({ error: "INVALID_REQUEST" });
  });

  it("validates producer fields and generation of transactional commits", () => {
    const d = new Driver();
    expect(errors(d.txnCommit("g", 1n, 0, [item("t", 0, 1n)], { transactionalId: "" }))).toEqual([
      "INVALID_REQUEST",
    ]);
    expect(errors(d.txnCommit("g", -1n, 0, [item("t", 0, 1n)]))).toEqual(["INVALID_REQUEST"]);
    expect(errors(d.txnCommit("g", 1n, -1, [item("t", 0, 1n)]))).toEqual(["INVALID_REQUEST"]);
    expect(
      errors(d.txnCommit("g", 1n, OFFSETS_LIMITS.producerEpochMax + 1, [item("t", 0, 1n)])),
    ).toEqual(["INVALID_REQUEST"]);
    expect(errors(d.txnCommit("", 1n, 0, [item("t", 0, 1n)]))).toEqual(["INVALID_GROUP_ID"]);
    expect(errors(d.txnCommit("g", 1n, 0, [item("t", 0, 1n)], { generationId: 3 }))).toEqual([
      "ILLEGAL_GENERATION",
    ]);
    expect(errors(d.txnCommit("g", 1n, 0, [item("t", 0, -5n), item("t", 1, 1n)]))).toEqual([
      "INVALID_REQUEST",
      "NONE",
    ]);
    expect(d.sm.pendingTransactions()).toMatchObject([{ offsetCount: 1 }]);
  });

  it("does not keep an empty pending transaction when every partition was refused", () => {
    const d = new Driver();
    d.txnCommit("g", 1n, 0, [item("t", 0, -5n)]);
    expect(d.sm.pendingTransactions()).toEqual([]);
    expect(d.offset("g", "t", 0, true).error).toBe("NONE");
  });

  it("bounds the pending offsets of one producer", () => {
    const d = new Driver();
    const max = OFFSETS_LIMITS.pendingOffsetsPerProducerMax;
    const full = Array.from({ length: max }, (_, i) => item("t", i, 1n));
    expect(errors(d.txnCommit("g", 1n, 0, full)).every((e) => e === "NONE")).toBe(true);
    expect(errors(d.txnCommit("g", 1n, 0, [item("t", max, 1n), item("t", 0, 2n)]))).toEqual([
      "THROTTLING_QUOTA_EXCEEDED",
      "NONE",
    ]);
    expect(d.marker(1n, 0, true, 0)).toMatchObject({ resolvedOffsets: max });
    expect(d.offset("g", "t", 0).offset).toBe(2n);
  });
});

describe("OffsetsStateMachine: expiry", () => {
  it("drops offsets past retention (not those with a pending commit) and idle producers", () => {
    const d = new Driver();
    d.commit("g", [item("t", 0, 1n), item("t", 1, 1n)], { timestampMs: 1000 });
    d.commit("g", [item("t", 2, 1n)], { timestampMs: 5000 });
    d.txnCommit("g", 1n, 0, [item("t", 1, 2n)], { timestampMs: 1000 });
    d.txnCommit("g", 2n, 0, [item("u", 0, 2n)], { timestampMs: 1000 });
    d.marker(2n, 0, true, 0, 1000);
    const result = d.apply({
      type: "expire",
      nowMs: 4000,
      offsetsRetentionMs: 3000,
      producerExpirationMs: 2000,
    });
    expect(result).toEqual({ type: "expire", offsetsRemoved: 2, producersRemoved: 1 });
    expect(d.offset("g", "t", 0).offset).toBe(-1n);
    expect(d.offset("g", "t", 1).offset).toBe(1n); // protected by the pending commit
    expect(d.offset("g", "t", 2).offset).toBe(1n);
    expect(d.sm.producerEpochs(2n)).toBeUndefined();
    expect(d.sm.producerEpochs(1n)).toBeDefined(); // has pending offsets
    expect(d.sm.stats().committedOffsets).toBe(2);
  });
});

describe("OffsetsStateMachine: snapshots and determinism", () => {
  function randomEntry(rng: SeededRandom, now: number): OffsetsEntry {
    const topic = rng.pick(["a", "b"]);
    const offsets = Array.from({ length: rng.int(1, 4) }, () =>
      item(topic, rng.int(0, 4), BigInt(rng.int(-1, 100)), rng.pick(["", "m"])),
    );
    const groupId = rng.pick(["g1", "g2", ""]);
    const producerId = BigInt(rng.int(0, 4));
    const epoch = rng.int(0, 4);
    switch (rng.int(0, 5)) {
      case 0:
        return {
          type: "commit",
          groupId,
          generationId: -1,
          memberId: "",
          groupInstanceId: "",
          timestampMs: now,
          offsets,
        };
      case 1:
      case 2:
        return {
          type: "txn-commit",
          transactionalId: `tx${producerId}`,
          groupId,
          producerId,
          producerEpoch: epoch,
          generationId: -1,
          memberId: "",
          groupInstanceId: "",
          timestampMs: now,
          offsets,
        };
      case 3:
        return {
          type: "marker",
          producerId,
          producerEpoch: epoch,
          committed: rng.bool(0.5),
          coordinatorEpoch: rng.int(0, 3),
          timestampMs: now,
        };
      default:
        return { type: "expire", nowMs: now, offsetsRetentionMs: 500, producerExpirationMs: 800 };
    }
  }

  it("restores to an identical state that keeps applying identically (seeded, several seeds)", () => {
    for (let seed = 1; seed <= 20; seed++) {
      const rng = new SeededRandom(seed);
      const a = new Driver();
      const entries = Array.from({ length: 300 }, (_, i) => randomEntry(rng, i * 10));
      const cut = rng.int(1, entries.length);
      entries.slice(0, cut).forEach((e) => a.apply(e));
      const b = new Driver();
      b.sm.restore(a.sm.snapshot(), a.index);
      b.index = a.index;
      expect(b.sm.snapshot()).toEqual(a.sm.snapshot());
      for (const e of entries.slice(cut)) expect(b.apply(e)).toEqual(a.apply(e));
      expect(new TextDecoder().decode(b.sm.snapshot())).toBe(
        new TextDecoder().decode(a.sm.snapshot()),
      );
      for (const g of ["g1", "g2"])
        expect(b.sm.fetchOffsets(g, undefined, true)).toEqual(
          a.sm.fetchOffsets(g, undefined, true),
        );
      expect(b.sm.stats()).toEqual(a.sm.stats());
    }
  });

  it("replaces existing state on restore", () => {
    const a = new Driver();
    a.commit("g", [item("t", 0, 1n)]);
    const b = new Driver();
    b.commit("other", [item("t", 0, 1n)]);
    b.txnCommit("other", 1n, 0, [item("t", 1, 1n)]);
    b.sm.restore(a.sm.snapshot(), 10);
    expect(b.offset("other", "t", 0).offset).toBe(-1n);
    expect(b.sm.pendingTransactions()).toEqual([]);
    expect(b.offset("g", "t", 0).offset).toBe(1n);
    expect(b.sm.stats().appliedIndex).toBe(10);
  });
});

// The find-hanging verdict (Kafka's TransactionsCommand rule): an open transaction is hanging
// only when its coordinator no longer tracks the partition in an ongoing or completing
// transaction; a rotated producer id during PrepareCommit/PrepareAbort still counts as tracked.
import { describe, expect, it } from "vitest";
import type { TransactionDescription, TransactionStateName } from "./admin.js";
import { judgeOpenTransaction, type CoordinatorView } from "./hanging-check.js";

const open = { topic: "t", partition: 1, producerId: 7n };

function described(
  state: TransactionStateName,
  over: Partial<TransactionDescription> = {},
): TransactionDescription {
  return {
    transactionalId: "tid",
    state,
    producerId: 7n,
    producerEpoch: 3,
    transactionTimeoutMs: 60_000,
    transactionStartTimeMs: 1,
    partitions: [],
    pendingMarkerPartitions: [],
    coordinatorEpoch: 1,
    coordinator: "c",
    ...over,
  };
}

function view(
  d: TransactionDescription | undefined,
  over: Partial<CoordinatorView> = {},
): CoordinatorView {
  return {
    idByProducer: new Map([[7n, "tid"]]),
    descriptions: new Map([["tid", d]]),
    rotatedPrepares: [],
    ...over,
  };
}

describe("judgeOpenTransaction", () => {
  it("an ongoing transaction that includes the partition is tracked, not hanging", () => {
    const v = judgeOpenTransaction(
      open,
      view(described("ONGOING", { partitions: [{ topic: "t", partition: 1 }] })),
    );
    expect(v).toMatchObject({ hanging: false, transactionalId: "tid", state: "ONGOING" });
  });

  it("PrepareCommit with the partition's marker pending is tracked (aborting it would break a commit)", () => {
    const d = described("PREPARE_COMMIT", {
      producerEpoch: 4,
      partitions: [
        { topic: "t", partition: 0 },
        { topic: "t", partition: 1 },
      ],
      pendingMarkerPartitions: [{ topic: "t", partition: 1 }],
    });
    expect(judgeOpenTransaction(open, view(d))).toMatchObject({
      hanging: false,
      state: "PREPARE_COMMIT",
    });
    expect(
      judgeOpenTransaction(
        open,
        view(
          described("PREPARE_ABORT", { pendingMarkerPartitions: [{ topic: "t", partition: 1 }] }),
        ),
      ),
    ).toMatchObject({ hanging: false });
  });

  it("an ongoing transaction of the id that does not include the partition: hanging", () => {
    const v = judgeOpenTransaction(
      open,
      view(
        described("ONGOING", {
          partitions: [
            { topic: "t", partition: 0 },
            { topic: "u", partition: 1 },
          ],
        }),
      ),
    );
    expect(v).toMatchObject({ hanging: true, transactionalId: "tid", state: "ONGOING" });
    expect(v.reason).toContain("does not include t-1");
  });

  it("a completed, empty or forgotten id, or an unknown producer id: hanging", () => {
    for (const s of ["COMPLETE_COMMIT", "COMPLETE_ABORT", "EMPTY"] as const) {
      expect(
        judgeOpenTransaction(
          open,
          view(described(s, { partitions: [{ topic: "t", partition: 1 }] })),
        ),
      ).toMatchObject({ hanging: true, state: s });
    }
    expect(judgeOpenTransaction(open, view(undefined))).toMatchObject({
      hanging: true,
      transactionalId: "tid",
    });
    const none: CoordinatorView = {
      idByProducer: new Map(),
      descriptions: new Map(),
      rotatedPrepares: [],
    };
    expect(judgeOpenTransaction(open, none)).toMatchObject({
      hanging: true,
      reason: "no coordinator knows producer 7",
    });
  });

  it("a producer id rotated at the decision: a completing transaction with the partition pending is tracked", () => {
    const rotated = described("PREPARE_COMMIT", {
      transactionalId: "other",
      producerId: 8n,
      producerEpoch: 0,
      pendingMarkerPartitions: [{ topic: "t", partition: 1 }],
    });
    const v = judgeOpenTransaction(open, {
      idByProducer: new Map(),
      descriptions: new Map(),
      rotatedPrepares: [rotated],
    });
    expect(v).toMatchObject({ hanging: false, transactionalId: "other" });
    const elsewhere = { ...rotated, pendingMarkerPartitions: [{ topic: "t", partition: 2 }] };
    expect(
      judgeOpenTransaction(open, {
        idByProducer: new Map(),
        descriptions: new Map(),
        rotatedPrepares: [elsewhere],
      }),
    ).toMatchObject({ hanging: true });
  });
});

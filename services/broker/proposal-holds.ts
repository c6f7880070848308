// A chaos failpoint that holds proposals instead of killing: the first transactional Kafka
// batch (transactions V1) to reach it after its decision (admitted because its transaction is
// open here, or verified, and its guard taken) waits the failpoint's hold before it is
// proposed, and so does every later batch of that (partition, producer) until then, each after
// its own decision, in arrival order. It widens the window of issue 35 item 1 (a decision read
// from applied state, a marker proposed before the batch) from a Raft round trip to seconds, so
// the chaos scenario hold-txn-batch-kafkajs-copier can show that the guard closes it.
import type { Failpoints } from "../../libs/common/failpoints.js";
import type { Logger } from "../../libs/common/logger.js";

export const HOLD_TXN_BATCH_FAILPOINT = "broker.hold-txn-batch-after-verify-decision";

/** What a held proposal logs when it settles. */
export interface HeldBatch {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly baseSequence: number;
  readonly recordCount: number;
}

type Settled =
  | { result: { error: string; message: string; baseOffset: bigint; duplicate: boolean } }
  | { error: string; message: string };

/**
 * The holds of a process whose TERN_FAILPOINTS names HOLD_TXN_BATCH_FAILPOINT (chaos runs), or
 * undefined: every other process proposes at once and never enters this file.
 */
export function proposalHoldsIfListed(
  failpoints: Failpoints | undefined,
): ProposalHolds | undefined {
  return failpoints?.listed(HOLD_TXN_BATCH_FAILPOINT) === true
    ? new ProposalHolds(failpoints)
    : undefined;
}

/** Proposals of a (partition, producer) held by HOLD_TXN_BATCH_FAILPOINT: the gate they wait for. */
export class ProposalHolds {
  private readonly gates = new Map<string, Promise<void>>();

  constructor(private readonly failpoints: Failpoints) {}

  /** The gate this batch's proposal waits for, or undefined (nothing held: propose at once). */
  gate(key: string, kafkaTransactional: boolean): Promise<void> | undefined {
    if (this.gates.size > 0) {
      const gate = this.gates.get(key);
      if (gate !== undefined) return gate;
    }
    if (!kafkaTransactional) return undefined;
    const hold = this.failpoints.hold(HOLD_TXN_BATCH_FAILPOINT);
    if (hold === undefined) return undefined;
    const gate = hold.then(() => void this.gates.delete(key));
    this.gates.set(key, gate);
    return gate;
  }
}

/** Proposes now, or once the gate opens (then in the order the batches got there, each outcome logged). */
export function proposeWhenOpen<T extends Settled>(
  logger: Logger,
  where: { readonly topic: string; readonly partition: number },
  batch: HeldBatch,
  gate: Promise<void> | undefined,
  propose: () => Promise<T>,
): Promise<T> {
  if (gate === undefined) return propose();
  return gate.then(propose).then((outcome) => {
    logger.warn(
      {
        failpoint: HOLD_TXN_BATCH_FAILPOINT,
        topic: where.topic,
        partition: where.partition,
        producerId: String(batch.producerId),
        producerEpoch: batch.producerEpoch,
        baseSequence: batch.baseSequence,
        records: batch.recordCount,
        ...("error" in outcome
          ? { error: outcome.error, message: outcome.message }
          : {
              error: outcome.result.error,
              message: outcome.result.message,
              baseOffset: String(outcome.result.baseOffset),
              duplicate: outcome.result.duplicate,
            }),
      },
      "held proposal settled",
    );
    return outcome;
  });
}

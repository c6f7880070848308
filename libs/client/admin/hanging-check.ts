// Is a partition's open transaction hanging? The broker's producer state only says that a
// producer has had a transaction open on the partition for a while; Kafka's find-hanging
// (TransactionsCommand) then asks the transaction's coordinator, and so does this: the open
// transaction is hanging only when the coordinator no longer tracks that partition in an
// ongoing or completing transaction. A partition the coordinator still tracks will get its
// marker from the coordinator; aborting it by hand would break that transaction (an ABORT
// marker on a partition of a transaction that then commits everywhere else).
import type { TransactionDescription, TransactionStateName } from "./transaction-types.js";

/** One producer's open transaction on one partition, as the partition's leader reports it. */
export interface OpenTransactionRef {
  readonly topic: string;
  readonly partition: number;
  readonly producerId: bigint;
}

/** What the coordinators say about one open transaction. */
export type CoordinatorVerdict =
  | {
      readonly hanging: false;
      readonly transactionalId: string;
      readonly state: TransactionStateName;
      readonly reason: string;
    }
  | {
      readonly hanging: true;
      readonly transactionalId?: string;
      readonly state?: TransactionStateName;
      readonly reason: string;
    };

/** The coordinators' answers the verdicts are made from. */
export interface CoordinatorView {
  /** The transactional id that owns each producer id (ListTransactions filtered by producer id). */
  readonly idByProducer: ReadonlyMap<bigint, string>;
  /** DescribeTransactions of those ids; undefined when the coordinator does not know the id (any more). */
  readonly descriptions: ReadonlyMap<string, TransactionDescription | undefined>;
  /**
   * PrepareCommit/PrepareAbort transactions whose producer id was rotated at the decision
   * (epoch exhausted: the record carries a new id at epoch 0, the markers the previous id),
   * so no listing by the previous id finds them.
   */
  readonly rotatedPrepares: readonly TransactionDescription[];
}

const ACTIVE: ReadonlySet<TransactionStateName> = new Set<TransactionStateName>([
  "ONGOING",
  "PREPARE_COMMIT",
  "PREPARE_ABORT",
]);

/**
 * Kafka's rule: the coordinator will still write this partition's marker when the transaction
 * is ongoing or completing and the partition is among its partitions (or its pending markers).
 * Epochs are not compared: a marker from the coordinator carries an epoch at least the
 * partition's, so it ends the open transaction whatever epoch opened it.
 */
export function coordinatorTracks(d: TransactionDescription, open: OpenTransactionRef): boolean {
  if (!ACTIVE.has(d.state)) return false;
  const has = (tps: TransactionDescription["partitions"]): boolean =>
    tps.some((tp) => tp.topic === open.topic && tp.partition === open.partition);
  return has(d.partitions) || has(d.pendingMarkerPartitions);
}

export function judgeOpenTransaction(
  open: OpenTransactionRef,
  view: CoordinatorView,
): CoordinatorVerdict {
  const where = `${open.topic}-${open.partition}`;
  const id = view.idByProducer.get(open.producerId);
  if (id !== undefined) {
    const d = view.descriptions.get(id);
    if (d === undefined)
      return {
        hanging: true,
        transactionalId: id,
        reason: `transactional id ${id} is no longer known to its coordinator`,
      };
    if (coordinatorTracks(d, open)) {
      return {
        hanging: false,
        transactionalId: id,
        state: d.state,
        reason: `${id} is ${d.state} with ${where}: its coordinator will write the marker`,
      };
    }
    const reason = ACTIVE.has(d.state)
      ? `${id}'s ${d.state} transaction does not include ${where}`
      : `${id} is ${d.state}: no transaction of it includes ${where}`;
    return { hanging: true, transactionalId: id, state: d.state, reason };
  }
  const rotated = view.rotatedPrepares.find((d) => coordinatorTracks(d, open));
  if (rotated !== undefined) {
    return {
      hanging: false,
      transactionalId: rotated.transactionalId,
      state: rotated.state,
      reason: `${rotated.transactionalId} is ${rotated.state} with ${where} under a rotated producer id: its coordinator will write the marker`,
    };
  }
  return { hanging: true, reason: `no coordinator knows producer ${open.producerId}` };
}

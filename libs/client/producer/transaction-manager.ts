// Producer identity (producer id + epoch) and, for a transactional producer, the transaction
// state machine and its coordinator calls: InitProducerId, AddOffsetsToTxn + TxnOffsetCommit,
// EndTxn. With transactions V2 every EndTxn answers the next epoch, which the producer adopts
// (sequences restart at 0), and the partition leaders add partitions to the transaction on the
// first batch (KIP-890 part 2), so the producer sends no AddPartitionsToTxn.
import type { ClientLogger as Logger } from "../../common/client-logger.js";
import { TernError, type ErrorName } from "../../common/errors.js";
import {
  AbortableTransactionError,
  ClientError,
  IllegalStateError,
  toClientError,
} from "../errors.js";
import type { RequestOf, ResponseOf, Transport } from "../network/transport.js";
import type { CoordinatorFinder } from "../network/coordinator-finder.js";
import type { MetadataCache } from "../network/metadata-cache.js";
import { retry } from "../retry/retry.js";
import { tpKey } from "./accumulator.js";
import { canTransition, checkLegal, type TxnMethod, type TxnState } from "./transaction-state.js";

export interface TopicPartitionOffset {
  readonly topic: string;
  readonly partition: number;
  /** The next offset to consume (last processed + 1). */
  readonly offset: bigint;
}

export interface GroupMetadata {
  readonly groupId: string;
  readonly generationId?: number;
  readonly memberId?: string;
  readonly groupInstanceId?: string;
}

export interface TransactionManagerOptions {
  readonly transactionalId: string | undefined;
  readonly transactionTimeoutMs: number;
  readonly coordinatorTimeoutMs: number;
}

const INIT_TIMEOUT_MS = 5_000;

/** The transaction coordinator calls a transactional producer makes about its own id. */
type TxnCallMethod = "InitProducerId" | "AddOffsetsToTxn" | "EndTxn";

export class TransactionManager {
  private txnState: TxnState;
  producerId = -1n;
  producerEpoch = -1;
  /** Partitions the current transaction sent a batch to (tpKey); their leaders added them. */
  private readonly sentTo = new Set<string>();
  private offsetsAdded = false;
  /** The first error of a batch or call inside the current transaction. */
  private abortableCause: ClientError | undefined;
  private fatalCause: ClientError | undefined;
  private identityInFlight: Promise<void> | undefined;

  constructor(
    private readonly opts: TransactionManagerOptions,
    private readonly transport: Transport,
    private readonly finder: CoordinatorFinder,
    private readonly metadata: MetadataCache,
    private readonly logger: Logger,
  ) {
    this.txnState = opts.transactionalId === undefined ? "READY" : "UNINITIALIZED";
  }

  get transactional(): boolean {
    return this.opts.transactionalId !== undefined;
  }

  get transactionalId(): string | undefined {
    return this.opts.transactionalId;
  }

  get state(): TxnState {
    return this.txnState;
  }

  get hasIdentity(): boolean {
    return this.producerId >= 0n;
  }

  get hasWork(): boolean {
    return this.sentTo.size > 0 || this.offsetsAdded;
  }

  guard(method: TxnMethod): void {
    if (this.fatalCause) throw this.fatalCause;
    if (!this.transactional)
      throw new IllegalStateError(`${method}() needs a producer with a transactionalId`);
    if (
      method !== "abortTransaction" &&
      this.txnState === "ABORTABLE_ERROR" &&
      this.abortableCause
    ) {
      throw new AbortableTransactionError(
        `${method}() refused: the transaction must be aborted (${this.abortableCause.message})`,
        this.abortableCause.code,
        { cause: this.abortableCause },
      );
    }
    checkLegal(method, this.txnState);
  }

  transition(to: TxnState): void {
    if (!canTransition(this.txnState, to))
      throw new IllegalStateError(`illegal transaction transition ${this.txnState} -> ${to}`);
    this.logger.debug({ from: this.txnState, to }, "transaction state");
    this.txnState = to;
  }

  fatalError(): ClientError | undefined {
    return this.fatalCause;
  }

  abortableError(): ClientError | undefined {
    return this.abortableCause;
  }

  /** Records an error of a batch or call; fatal ones poison the producer. */
  onError(e: ClientError): void {
    if (e.fatal) {
      this.fatalCause ??= e;
      this.txnState = "FATAL_ERROR";
      return;
    }
    if (!this.transactional) return;
    this.abortableCause ??= e;
    if (this.txnState === "IN_TRANSACTION" || this.txnState === "COMMITTING_TRANSACTION")
      this.txnState = "ABORTABLE_ERROR";
  }

  /** A batch of the current transaction left for the partition (its leader adds it). */
  markSent(topic: string, partition: number): void {
    this.sentTo.add(tpKey(topic, partition));
  }

  // --- identity ---------------------------------------------------------------------------

  /** Idempotent-only producers: a fresh producer id from any coordinator (coalesced). */
  ensureIdentity(): Promise<void> {
    if (this.hasIdentity) return Promise.resolve();
    this.identityInFlight ??= this.fetchIdempotentIdentity().finally(
      () => (this.identityInFlight = undefined),
    );
    return this.identityInFlight;
  }

  /** Drops the identity (after a batch failed for good): the next ensureIdentity gets a new one. */
  resetIdentity(): void {
    if (this.transactional) return;
    this.producerId = -1n;
    this.producerEpoch = -1;
  }

  private async fetchIdempotentIdentity(): Promise<void> {
    const r = await retry(
      async () => {
        await this.metadata.current();
        const nodes = this.metadata.aliveNodes("coordinator");
        if (nodes.length === 0) {
          this.metadata.invalidate();
          throw new TernError("COORDINATOR_NOT_AVAILABLE", "no alive coordinator in metadata");
        }
        const node = nodes[Math.floor(Math.random() * nodes.length)]!;
        return this.transport.call(
          "TransactionCoordinator",
          node.address,
          "InitProducerId",
          { transactionalId: "", transactionTimeoutMs: 0, producerId: "-1", producerEpoch: -1 },
          INIT_TIMEOUT_MS,
        );
      },
      { attemptsMax: 20, timeoutMs: this.opts.coordinatorTimeoutMs },
    );
    this.producerId = BigInt(r.producerId);
    this.producerEpoch = Number(r.producerEpoch);
    this.logger.debug(
      { producerId: String(this.producerId), epoch: this.producerEpoch },
      "idempotent producer id",
    );
  }

  /** initTransactions(): registers the transactional id, fencing older instances. */
  async initTransactions(): Promise<void> {
    this.guard("initTransactions");
    this.transition("INITIALIZING");
    try {
      const r = await this.txnCall("InitProducerId", {
        transactionTimeoutMs: this.opts.transactionTimeoutMs,
        producerId: String(this.producerId),
        producerEpoch: this.producerEpoch,
      });
      this.producerId = BigInt(r.producerId);
      this.producerEpoch = Number(r.producerEpoch);
      this.transition("READY");
    } catch (e) {
      const ce = toClientError(e, "initTransactions");
      if (ce.fatal) this.onError(ce);
      throw ce;
    }
  }

  beginTransaction(): void {
    this.guard("beginTransaction");
    this.sentTo.clear();
    this.offsetsAdded = false;
    this.abortableCause = undefined;
    this.transition("IN_TRANSACTION");
  }

  async sendOffsets(offsets: readonly TopicPartitionOffset[], group: GroupMetadata): Promise<void> {
    this.guard("sendOffsetsToTransaction");
    try {
      await this.txnCall("AddOffsetsToTxn", {
        producerId: String(this.producerId),
        producerEpoch: this.producerEpoch,
        groupId: group.groupId,
      });
      this.offsetsAdded = true;
      const request = {
        transactionalId: this.opts.transactionalId,
        groupId: group.groupId,
        producerId: String(this.producerId),
        producerEpoch: this.producerEpoch,
        generationId: group.generationId ?? -1,
        memberId: group.memberId ?? "",
        groupInstanceId: group.groupInstanceId ?? "",
        partitions: offsets.map((o) => ({
          topic: o.topic,
          partition: o.partition,
          offset: String(o.offset),
          leaderEpoch: -1,
          metadata: "",
        })),
      };
      await retry(
        async () => {
          const res = await this.finder.call(
            "GROUP",
            group.groupId,
            "GroupCoordinator",
            "TxnOffsetCommit",
            request,
            { timeoutMs: this.opts.coordinatorTimeoutMs },
          );
          const failed = (res.partitions ?? []).find((p) => p.errorCode !== "NONE");
          if (failed)
            throw new TernError(
              failed.errorCode as ErrorName,
              `${failed.topic}/${failed.partition}: ${failed.errorMessage}`,
            );
        },
        { attemptsMax: 20, timeoutMs: this.opts.coordinatorTimeoutMs },
      );
    } catch (e) {
      const ce = toClientError(e, "sendOffsetsToTransaction");
      this.onError(ce);
      throw ce.fatal ? ce : new AbortableTransactionError(ce.message, ce.code, { cause: ce });
    }
  }

  /** EndTxn; adopts the epoch it answers. Skipped when nothing joined the transaction. */
  async endTransaction(commit: boolean): Promise<void> {
    if (this.hasWork) {
      const r = await this.txnCall("EndTxn", {
        producerId: String(this.producerId),
        producerEpoch: this.producerEpoch,
        committed: commit,
      });
      this.producerId = BigInt(r.producerId);
      this.producerEpoch = Number(r.producerEpoch);
    }
    this.sentTo.clear();
    this.offsetsAdded = false;
    this.abortableCause = undefined;
  }

  private txnCall<M extends TxnCallMethod>(
    method: M,
    body: Omit<RequestOf<"TransactionCoordinator", M>, "transactionalId">,
  ): Promise<ResponseOf<"TransactionCoordinator", M>> {
    const id = this.opts.transactionalId!;
    const request = { transactionalId: id, ...body } as RequestOf<"TransactionCoordinator", M>;
    return this.finder.call("TRANSACTION", id, "TransactionCoordinator", method, request, {
      timeoutMs: this.opts.coordinatorTimeoutMs,
    });
  }
}

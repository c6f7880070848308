// One transactional producer of the workload, speaking the coordinator and broker protocol
// directly (InitProducerId, AddPartitionsToTxn, Produce with sequences, AddOffsetsToTxn,
// TxnOffsetCommit, EndTxn) so that every acknowledged offset is known exactly. Calls are
// retried on retriable answers until callTimeoutMs; anything else is thrown as a TernError.
import { TernError, type ErrorName } from "../../../libs/common/errors.js";
import { errorName, RETRIABLE, sleep, type ClusterClients } from "./cluster-clients.js";
import type { LateRequests } from "../faults/late-requests.js";
import { buildUncompressedBatch } from "../../../libs/records/batch-builder.js";
import type { RecordBatch } from "../../../libs/common/proto-types/index.js";
import type {
  CoordinatorRequest,
  CoordinatorResponse,
} from "../../../services/coordinator/coordinator-client.js";

const PRODUCE_TIMEOUT_MS = 8_000;
const RETRY_BACKOFF_MS = 150;
const TXN_TIMEOUT_MS = 60_000;

const SLOW_INIT_MS = 2_000;
const SLOW_INITS_MAX = 200;
const TRACE_INIT = process.env.CHAOS_TRACE_INIT === "1";

/** InitProducerId calls that took SLOW_INIT_MS or more (wall-clock start, to match server logs). */
export interface SlowInit {
  readonly transactionalId: string;
  readonly startedAt: string;
  readonly tookMs: number;
  readonly findCoordinatorMs?: number;
  readonly findCoordinatorErrors?: Record<string, number>;
}
export const slowInits: SlowInit[] = [];

/**
 * Called with the transactional id just before an EndTxn is sent: a fault can strike while
 * exactly that request is in flight (the runner hosts the workload, so this is synchronous).
 */
export const beforeEndTxn = new Set<(transactionalId: string) => void>();

/** FindCoordinator retried until it answers (bounded): how long, and the errors seen meanwhile. */
async function traceFindCoordinator(
  clients: ClusterClients,
  transactionalId: string,
): Promise<{ tookMs: number; errors: Record<string, number> }> {
  const startedMs = Date.now();
  const errors: Record<string, number> = {};
  for (let attempt = 0; attempt < 600 && Date.now() - startedMs < 60_000; attempt++) {
    try {
      await clients.coordinators.findCoordinator(transactionalId);
      return { tookMs: Date.now() - startedMs, errors };
    } catch (e) {
      const code = errorName(e);
      errors[code] = (errors[code] ?? 0) + 1;
      await sleep(100);
    }
  }
  return { tookMs: -1, errors };
}

export interface Identity {
  readonly producerId: string;
  readonly producerEpoch: number;
}

export class TxnSession {
  identity: Identity | undefined;
  private readonly added = new Set<string>();
  private readonly sequences = new Map<string, number>();

  constructor(
    private readonly clients: ClusterClients,
    readonly transactionalId: string,
    private readonly callTimeoutMs: number,
    private readonly late?: LateRequests,
  ) {}

  private coordinator<
    M extends "InitProducerId" | "AddPartitionsToTxn" | "AddOffsetsToTxn" | "EndTxn",
  >(method: M, request: CoordinatorRequest<M>): Promise<CoordinatorResponse<M>> {
    return this.clients.coordinators.txnCall(
      this.transactionalId,
      method,
      { transactionalId: this.transactionalId, ...request },
      this.callTimeoutMs,
    );
  }

  private id(): Identity {
    if (!this.identity)
      throw new TernError(
        "INVALID_TXN_STATE",
        `${this.transactionalId} has no producer id: init first`,
      );
    return this.identity;
  }

  /**
   * InitProducerId: fences every earlier instance and completes (or aborts) its open transaction.
   * presentHeld sends the identity this session holds (a KIP-360 re-init) instead of none; if
   * that is refused the session keeps it, so its later requests still reach the cluster with it.
   */
  async init(options: { presentHeld?: boolean } = {}): Promise<Identity> {
    const held = options.presentHeld === true ? this.identity : undefined;
    try {
      return await this.initWith(held);
    } catch (e) {
      if (held !== undefined) this.identity = held;
      throw e;
    }
  }

  private async initWith(held: Identity | undefined): Promise<Identity> {
    this.identity = undefined;
    const startedMs = Date.now();
    // CHAOS_TRACE_INIT=1: time FindCoordinator on its own first (one extra RPC) to split slow inits.
    const find = TRACE_INIT
      ? await traceFindCoordinator(this.clients, this.transactionalId)
      : undefined;
    const findMs = find?.tookMs;
    const r = await this.coordinator("InitProducerId", {
      transactionTimeoutMs: TXN_TIMEOUT_MS,
      producerId: held?.producerId ?? "-1",
      producerEpoch: held?.producerEpoch ?? -1,
    }).finally(() => {
      const tookMs = Date.now() - startedMs;
      if (tookMs >= SLOW_INIT_MS && slowInits.length < SLOW_INITS_MAX)
        slowInits.push({
          transactionalId: this.transactionalId,
          startedAt: new Date(startedMs).toISOString(),
          tookMs,
          findCoordinatorMs: findMs,
          findCoordinatorErrors: find?.errors,
        });
    });
    this.identity = { producerId: String(r.producerId), producerEpoch: Number(r.producerEpoch) };
    this.added.clear();
    return this.identity;
  }

  async addPartitions(
    partitions: ReadonlyArray<{ topic: string; partition: number }>,
  ): Promise<void> {
    const missing = partitions.filter((p) => !this.added.has(`${p.topic}/${p.partition}`));
    if (missing.length === 0) return;
    const request = { ...this.id(), partitions: missing, verifyOnly: false };
    const r = await this.coordinator("AddPartitionsToTxn", request);
    this.late?.maybeResend(this.transactionalId, "AddPartitionsToTxn", {
      transactionalId: this.transactionalId,
      ...request,
    });
    const bad = (r.results ?? []).find((x) => x.errorCode !== "NONE");
    if (bad)
      throw new TernError(
        bad.errorCode as ErrorName,
        `AddPartitionsToTxn: ${bad.errorMessage ?? ""}`,
      );
    for (const p of missing) this.added.add(`${p.topic}/${p.partition}`);
  }

  async addOffsets(groupId: string): Promise<void> {
    // Refusals come as the call's status (txnCall throws them): the answer has no error field.
    await this.coordinator("AddOffsetsToTxn", { ...this.id(), groupId });
  }

  /** One transactional batch (the partition must have been added); answers its base offset. */
  async send(topic: string, partition: number, values: readonly string[]): Promise<number> {
    return this.produce(topic, partition, values.length, (id, baseSequence) => ({
      producerId: id.producerId,
      producerEpoch: id.producerEpoch,
      baseSequence,
      isTransactional: true,
      records: values.map((v) => ({ value: Buffer.from(v), timestampMs: "0" })),
    }));
  }

  /**
   * One transactional batch of keyed records, a null value a tombstone (sent as a Kafka record
   * batch v2: proto records cannot carry a null value); answers its base offset.
   */
  async sendKeyed(
    topic: string,
    partition: number,
    records: ReadonlyArray<{ key: string; value: string | null }>,
  ): Promise<number> {
    return this.produce(topic, partition, records.length, (id, baseSequence) => ({
      kafkaBatch: buildUncompressedBatch({
        producerId: BigInt(id.producerId),
        producerEpoch: id.producerEpoch,
        baseSequence,
        isTransactional: true,
        records: records.map((r) => ({
          key: Buffer.from(r.key),
          value: r.value === null ? null : Buffer.from(r.value),
          headers: [],
          timestampMs: Date.now(),
        })),
      }),
    }));
  }

  private async produce(
    topic: string,
    partition: number,
    count: number,
    batchOf: (id: Identity, baseSequence: number) => RecordBatch,
  ): Promise<number> {
    const id = this.id();
    const seqKey = `${id.producerId}/${id.producerEpoch}/${topic}/${partition}`;
    const baseSequence = this.sequences.get(seqKey) ?? 0;
    const batch = batchOf(id, baseSequence);
    const deadline = Date.now() + this.callTimeoutMs;
    let last = "REQUEST_TIMED_OUT";
    while (Date.now() < deadline) {
      try {
        const leader = await this.clients.leader(topic, partition);
        if (leader) {
          const r = await this.clients.broker(leader.address).produce(
            {
              acks: -1,
              timeoutMs: PRODUCE_TIMEOUT_MS,
              transactionalId: this.transactionalId,
              partitions: [
                {
                  topic,
                  partition,
                  batch,
                },
              ],
            },
            PRODUCE_TIMEOUT_MS + 2_000,
          );
          const p = r.partitions[0];
          last = String(p.errorCode);
          if (
            last === "NONE" ||
            (last === "DUPLICATE_SEQUENCE_NUMBER" && Number(p.baseOffset) >= 0)
          ) {
            this.sequences.set(seqKey, baseSequence + count);
            return Number(p.baseOffset);
          }
          if (!RETRIABLE.has(last))
            throw new TernError(
              last as ErrorName,
              `Produce ${topic}/${partition}: ${p.errorMessage ?? ""}`,
            );
        } else last = "LEADER_NOT_AVAILABLE";
      } catch (e) {
        if (e instanceof TernError && !RETRIABLE.has(e.errorName)) throw e;
        last = errorName(e);
      }
      this.clients.invalidate();
      await sleep(RETRY_BACKOFF_MS);
    }
    throw new TernError(
      RETRIABLE.has(last) ? "REQUEST_TIMED_OUT" : (last as ErrorName),
      `Produce ${topic}/${partition} gave up after ${this.callTimeoutMs} ms (last ${last})`,
    );
  }

  /** TxnOffsetCommit of input offsets (the group must have been added with addOffsets). */
  async commitOffsets(
    groupId: string,
    offsets: ReadonlyArray<{ topic: string; partition: number; offset: number }>,
  ): Promise<void> {
    const id = this.id();
    const deadline = Date.now() + this.callTimeoutMs;
    let last = "REQUEST_TIMED_OUT";
    while (Date.now() < deadline) {
      try {
        const r = await this.clients.groupCall(groupId, "TxnOffsetCommit", {
          transactionalId: this.transactionalId,
          producerId: id.producerId,
          producerEpoch: id.producerEpoch,
          generationId: -1,
          partitions: offsets.map((o) => ({
            topic: o.topic,
            partition: o.partition,
            offset: String(o.offset),
            leaderEpoch: -1,
          })),
        });
        const bad = (r.partitions ?? []).find((x) => x.errorCode !== "NONE");
        if (!bad) return;
        last = String(bad.errorCode);
        if (!RETRIABLE.has(last))
          throw new TernError(last as ErrorName, `TxnOffsetCommit: ${bad.errorMessage ?? ""}`);
      } catch (e) {
        if (e instanceof TernError && !RETRIABLE.has(e.errorName)) throw e;
        last = errorName(e);
      }
      this.clients.invalidate();
      await sleep(RETRY_BACKOFF_MS);
    }
    throw new TernError("REQUEST_TIMED_OUT", `TxnOffsetCommit gave up (last ${last})`);
  }

  /** EndTxn; on success the session carries the bumped epoch for the next transaction. */
  async end(commit: boolean): Promise<void> {
    const request = { ...this.id(), committed: commit };
    for (const hook of beforeEndTxn) hook(this.transactionalId);
    const r = await this.coordinator("EndTxn", request);
    this.late?.maybeResend(this.transactionalId, "EndTxn", {
      transactionalId: this.transactionalId,
      ...request,
    });
    this.identity = { producerId: String(r.producerId), producerEpoch: Number(r.producerEpoch) };
    this.added.clear();
  }
}

// KIP-890 add-partition verification: before the first transactional append of a (producer
// id, epoch) to a partition, the leader asks the transaction coordinator whether the partition
// was added to that producer's ongoing transaction, or (part 2, transactions V2) asks it to add
// the partition. Prevents hanging transactions created by a late produce after the transaction
// ended. Successes are remembered (verification-cache.ts) until a marker of the producer is
// applied to the partition; each id's coordinator address is remembered until it moves.
import {
  COORDINATOR_MOVED_CODES,
  FIND_COORDINATOR_CODES,
  RETRIABLE_CODES,
  type ErrorName,
} from "../../libs/common/errors.js";
import { fromGrpcError } from "../../libs/common/grpc-errors.js";
import type { Logger } from "../../libs/common/logger.js";
import {
  AddPartitionsBatcher,
  type AddRequest,
  type PartitionResult,
} from "./add-partitions-batcher.js";
import { BROKER_LIMITS } from "./broker-limits.js";
import { VerificationCache } from "./verification-cache.js";
import { hedged } from "../../libs/common/hedge.js";
import type { RequestOf, ResponseOf, ServiceTransport } from "../../libs/runtime/transport.js";
import type { Scheduler, TimerHandle } from "../../libs/runtime/scheduler.js";

/**
 * Attempts of one verification: a second one after the coordinator moved, or after a refusal
 * from a remembered address (found afresh first).
 */
const VERIFY_ATTEMPTS_MAX = 2;
/** Transactional ids whose coordinator address is remembered (oldest forgotten first). */
const COORDINATOR_ADDRESSES_MAX = 10_000;
/** FindCoordinator: how long one coordinator may stay silent before the next is asked too. */
const FIND_HEDGE_MS = 250;
/**
 * AddPartitionsToTxn: how long the remembered coordinator may stay silent before FindCoordinator
 * is asked whether the id moved (a leader cut off from us answers nothing until the timeout).
 */
const ADD_HEDGE_MS = 250;

/** One attempt's verdict; remembered: the address that gave it was remembered, not found for it. */
interface Attempt {
  readonly verdict: Verdict;
  readonly address?: string;
  readonly remembered: boolean;
}

/** One add's outcome at the coordinator address that gave it. */
type AddOutcome =
  | { readonly address: string; readonly result: PartitionResult }
  | { readonly address: string; readonly error: unknown };

export interface Verdict {
  readonly error: ErrorName;
  readonly message: string;
}

/**
 * "verify": the producer added the partition itself (AddPartitionsToTxn); "add": the broker
 * adds it for a transactions-V2 producer (KIP-890 part 2), saving the producer that round trip.
 */
export type VerifyMode = "verify" | "add";

export interface TxnVerifier {
  verify(
    transactionalId: string,
    producerId: bigint,
    producerEpoch: number,
    topic: string,
    partition: number,
    mode?: VerifyMode,
  ): Promise<Verdict>;
  /**
   * A COMMIT/ABORT marker of producerId was applied to the partition (undefined: the partition's
   * state was replaced by a snapshot): what was verified for it no longer holds.
   */
  forget(topic: string, partition: number, producerId?: bigint): void;
}

/**
 * For TERN_TXN_PARTITION_VERIFICATION=false: every append a producer added itself is allowed
 * unchecked. The adds of transactions-V2 producers still go to the coordinator: they are not a
 * check but how those producers' partitions join their transactions.
 */
export function withoutVerification(adder: TxnVerifier): TxnVerifier {
  return {
    verify: async (transactionalId, producerId, producerEpoch, topic, partition, mode) =>
      mode === "add"
        ? adder.verify(transactionalId, producerId, producerEpoch, topic, partition, mode)
        : { error: "NONE", message: "" },
    forget: (topic, partition, producerId) => adder.forget(topic, partition, producerId),
  };
}

export interface GrpcTxnVerifierOptions {
  /** Calls to the coordinators (the process runtime's transport; its owner closes it). */
  readonly transport: ServiceTransport;
  /** Addresses of coordinator nodes, refreshed from metadata. */
  readonly coordinators: () => readonly string[];
  readonly logger: Logger;
  /** The hedge and batching timers (the process runtime's). */
  readonly scheduler: Scheduler;
  readonly timeoutMs?: number;
}

/** Finds the coordinator with FindCoordinator (remembered), then asks AddPartitionsToTxn. */
export class GrpcTxnVerifier implements TxnVerifier {
  /** Transactional id → its coordinator's address, until a call says it moved or fails. */
  private readonly coordinatorOf = new Map<string, string>();
  /** Successful verifications: the transaction of (pid, epoch) includes the partition. */
  readonly verified = new VerificationCache(BROKER_LIMITS.verifiedCacheMax);
  /** The partitions of one transaction verified in the same turn share one request. */
  private readonly adds: AddPartitionsBatcher;

  constructor(private readonly options: GrpcTxnVerifierOptions) {
    this.adds = new AddPartitionsBatcher(async (address, request, timeoutMs) => {
      const response = await this.call(address, "AddPartitionsToTxn", request, timeoutMs);
      return response?.results ?? null;
    }, options.scheduler);
  }

  async verify(
    transactionalId: string,
    producerId: bigint,
    producerEpoch: number,
    topic: string,
    partition: number,
    mode: VerifyMode = "verify",
  ): Promise<Verdict> {
    if (this.verified.has(producerId, producerEpoch, topic, partition))
      return { error: "NONE", message: "" };
    const token = this.verified.begin();
    const timeoutMs = this.options.timeoutMs ?? BROKER_LIMITS.verifyTimeoutMs;
    let verdict: Verdict = { error: "COORDINATOR_NOT_AVAILABLE", message: "no attempt made" };
    let refusedBy: string | undefined;
    for (let attempt = 0; attempt < VERIFY_ATTEMPTS_MAX; attempt++) {
      const tried = await this.verifyOnce(
        transactionalId,
        producerId,
        producerEpoch,
        topic,
        partition,
        mode,
        timeoutMs,
        refusedBy,
      );
      verdict = tried.verdict;
      if (verdict.error === "NONE") {
        this.verified.add(token, producerId, producerEpoch, topic, partition);
        return verdict;
      }
      // The coordinator moved or is loading: find it again once.
      if (COORDINATOR_MOVED_CODES.has(verdict.error)) continue;
      // A refusal the producer cannot retry, from an address remembered from an earlier call,
      // may be a deposed coordinator's (cut off from its quorum, it has not heard of the new
      // leader): find the coordinator afresh (that address asked last) and ask once more.
      if (tried.remembered && tried.address !== undefined && !RETRIABLE_CODES.has(verdict.error)) {
        this.forgetCoordinator(transactionalId, tried.address);
        refusedBy = tried.address;
        continue;
      }
      return verdict;
    }
    return verdict;
  }

  forget(topic: string, partition: number, producerId?: bigint): void {
    this.verified.forget(topic, partition, producerId);
  }

  private async verifyOnce(
    transactionalId: string,
    producerId: bigint,
    producerEpoch: number,
    topic: string,
    partition: number,
    mode: VerifyMode,
    timeoutMs: number,
    refusedBy: string | undefined,
  ): Promise<Attempt> {
    const remembered = this.coordinatorOf.get(transactionalId);
    let coordinatorAddress: string | undefined;
    const attempt = (verdict: Verdict): Attempt => ({
      verdict,
      ...(coordinatorAddress !== undefined ? { address: coordinatorAddress } : {}),
      remembered: remembered !== undefined && coordinatorAddress === remembered,
    });
    try {
      coordinatorAddress =
        remembered ?? (await this.findCoordinator(transactionalId, timeoutMs, refusedBy));
      this.rememberCoordinator(transactionalId, coordinatorAddress);
      const outcome = await this.addHedged(
        transactionalId,
        coordinatorAddress,
        {
          transactionalId,
          producerId: producerId.toString(),
          producerEpoch,
          verifyOnly: mode === "verify",
        },
        topic,
        partition,
        timeoutMs,
      );
      coordinatorAddress = outcome.address;
      if ("error" in outcome) throw outcome.error;
      const result = outcome.result;
      const code = result.errorCode;
      if (code === "NONE") return attempt({ error: "NONE", message: "" });
      if (FIND_COORDINATOR_CODES.has(code as ErrorName))
        this.forgetCoordinator(transactionalId, coordinatorAddress);
      return attempt({
        error: code as ErrorName,
        message: `coordinator refused ${topic}/${partition} for producer ${producerId} epoch ${producerEpoch}: ${result.errorMessage}`,
      });
    } catch (e) {
      // Whole-request refusals (PRODUCER_FENCED, TRANSACTION_TIMED_OUT, ...) pass through.
      const err = fromGrpcError(e);
      const error: ErrorName =
        err.errorName === "NETWORK_EXCEPTION" || err.errorName === "UNKNOWN_SERVER_ERROR"
          ? "COORDINATOR_NOT_AVAILABLE"
          : err.errorName;
      // error is the name itself or COORDINATOR_NOT_AVAILABLE: both find the coordinator again.
      if (coordinatorAddress !== undefined && FIND_COORDINATOR_CODES.has(error))
        this.forgetCoordinator(transactionalId, coordinatorAddress);
      return attempt({ error, message: `add-partition verification failed: ${err.message}` });
    }
  }

  /**
   * The add at address, hedged (libs/common/hedge.ts): while it is silent, FindCoordinator is
   * asked every ADD_HEDGE_MS (the silent node last) and, when it names another node, the add
   * goes there too. After a leader is cut off (packets dropped, no reset) and a new one elected,
   * a produce would otherwise wait the whole timeout on the old address, and its retry on the
   * same address again. An add is idempotent, and a refusal sends the caller round again.
   */
  private async addHedged(
    transactionalId: string,
    address: string,
    request: Omit<AddRequest, "partitions">,
    topic: string,
    partition: number,
    timeoutMs: number,
  ): Promise<AddOutcome> {
    const outcome = await hedged({
      address,
      send: (at) => this.adds.add(at, request, topic, partition, timeoutMs),
      relocate: async (silent) => {
        const other = await this.findCoordinator(transactionalId, timeoutMs, silent);
        if (other !== silent) this.rememberCoordinator(transactionalId, other);
        return other;
      },
      delayMs: ADD_HEDGE_MS,
      scheduler: this.options.scheduler,
      relocatesMax: Math.ceil(timeoutMs / ADD_HEDGE_MS),
    });
    return outcome.ok
      ? { address: outcome.address, result: outcome.value }
      : { address: outcome.address, error: outcome.error };
  }

  private rememberCoordinator(transactionalId: string, address: string): void {
    if (this.coordinatorOf.get(transactionalId) === address) return;
    if (this.coordinatorOf.size >= COORDINATOR_ADDRESSES_MAX) {
      const oldest = this.coordinatorOf.keys().next().value;
      if (oldest !== undefined) this.coordinatorOf.delete(oldest);
    }
    this.coordinatorOf.set(transactionalId, address);
  }

  /** Forgets the address only if it is still the one that failed (a newer lookup may have replaced it). */
  private forgetCoordinator(transactionalId: string, address: string): void {
    if (this.coordinatorOf.get(transactionalId) === address)
      this.coordinatorOf.delete(transactionalId);
  }

  /**
   * Asks the coordinators in turn (`silent`, one not answering us, last), hedged: the next one
   * is asked when the previous has failed or not answered within FIND_HEDGE_MS, and the first
   * that names the coordinator wins. A node cut off from us (packets dropped, no reset) would
   * otherwise hold the verification, and the produce waiting on it, for the whole timeout while
   * the others could answer at once.
   */
  private findCoordinator(
    transactionalId: string,
    timeoutMs: number,
    silent?: string,
  ): Promise<string> {
    // A node not answering us is asked last (it may be the only one).
    const known = this.options.coordinators();
    const addresses = [
      ...known.filter((a) => a !== silent),
      ...known.filter((a) => a === silent),
    ].slice(0, 8);
    if (addresses.length === 0)
      return Promise.reject(new Error("no coordinator address in metadata"));
    return new Promise((resolve, reject) => {
      let lastError: unknown;
      let started = 0;
      let failed = 0;
      let done = false;
      const scheduler = this.options.scheduler;
      let hedge: TimerHandle | undefined;
      const next = (): void => {
        if (done || started >= addresses.length) return;
        const address = addresses[started++]!;
        scheduler.clearTimeout(hedge);
        hedge = started < addresses.length ? scheduler.setTimeout(next, FIND_HEDGE_MS) : undefined;
        this.call(
          address,
          "FindCoordinator",
          { key: transactionalId, keyType: "TRANSACTION" },
          timeoutMs,
        ).then((r) => {
          if (r?.errorCode === "NONE" && r.coordinator?.address)
            return finish(String(r.coordinator.address));
          fail(new Error(`FindCoordinator: ${r?.errorCode} ${r?.errorMessage ?? ""}`));
        }, fail);
      };
      const fail = (e: unknown): void => {
        lastError = e;
        failed += 1;
        if (done) return;
        if (failed === addresses.length) {
          done = true;
          scheduler.clearTimeout(hedge);
          reject(lastError);
        } else {
          next();
        }
      };
      const finish = (address: string): void => {
        if (done) return;
        done = true;
        scheduler.clearTimeout(hedge);
        resolve(address);
      };
      next();
    });
  }

  private call<M extends "FindCoordinator" | "AddPartitionsToTxn">(
    address: string,
    method: M,
    request: RequestOf<"TransactionCoordinator", M>,
    timeoutMs: number,
  ): Promise<ResponseOf<"TransactionCoordinator", M>> {
    return this.options.transport.unary("TransactionCoordinator", address, method, request, {
      timeoutMs,
    });
  }
}

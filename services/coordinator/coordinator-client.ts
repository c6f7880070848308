// A thin promise client of tern.v1.TransactionCoordinator for tests, benchmarks and tools (the
// full SDK lives in libs/client): finds the coordinator of a transactional id with
// FindCoordinator and follows it across failovers, retrying only retriable codes, bounded by a
// deadline.
import { FIND_COORDINATOR_CODES, TernError, type ErrorName } from "../../libs/common/errors.js";
import { fromGrpcError } from "../../libs/common/grpc-errors.js";
import { loadTernProto } from "../../libs/common/proto.js";
import { GrpcClientCache } from "../../libs/grpc/grpc-client-cache.js";
import { grpcDeadline } from "../../libs/grpc/grpc-service-transport.js";
import { hedged } from "../../libs/common/hedge.js";
import { isHedgeableTxnCall } from "../../libs/common/hedgeable-txn-calls.js";
import type { TransactionCoordinatorClient } from "../../libs/common/proto-types/index.js";
import { unaryCall, type RequestOf, type ResponseOf } from "../../libs/grpc/unary-call.js";
import { processCredentials } from "../../libs/server/tls/credentials.js";
import { sleep } from "../../libs/runtime/sleep.js";
import { applicationClock } from "../../libs/runtime/system-clock.js";
import { systemRandom } from "../../libs/runtime/system-random.js";

export type CoordinatorMethod =
  | "FindCoordinator"
  | "InitProducerId"
  | "AddPartitionsToTxn"
  | "AddOffsetsToTxn"
  | "EndTxn"
  | "ListTransactions"
  | "DescribeTransactions"
  | "AbortTransaction";
export type CoordinatorRequest<M extends CoordinatorMethod> = RequestOf<
  TransactionCoordinatorClient,
  M
>;
export type CoordinatorResponse<M extends CoordinatorMethod> = ResponseOf<
  TransactionCoordinatorClient,
  M
>;

const CALL_DEADLINE_MS = 10_000;
/** Backoff between attempts: doubling from the min to the max, half of it random. A failover
 * is usually found on the first or second retry (the survivors elect within ~100 ms of a crash). */
const RETRY_BACKOFF_MS_MIN = 20;
const RETRY_BACKOFF_MS_MAX = 400;
const CLIENTS_MAX = 64;
/** A call silent this long asks FindCoordinator elsewhere, and goes where it names too. */
const HEDGE_MS = 500;

export class CoordinatorClient {
  private readonly clients = new GrpcClientCache({
    credentials: processCredentials(),
    clientsMax: CLIENTS_MAX,
  });
  private readonly cached = new Map<string, string>();
  private next = 0;
  /** It runs in a test's or tool's process: its retry pauses keep that process waiting. */
  private readonly clock = applicationClock;
  private readonly random = systemRandom();

  /** bootstrap: addresses of coordinator nodes (any of them answers FindCoordinator). */
  constructor(private readonly bootstrap: readonly string[]) {
    if (bootstrap.length === 0)
      throw new Error("CoordinatorClient needs at least one coordinator address");
  }

  call<M extends CoordinatorMethod>(
    address: string,
    method: M,
    request: CoordinatorRequest<M>,
    deadlineMs = CALL_DEADLINE_MS,
  ): Promise<CoordinatorResponse<M>> {
    return unaryCall(this.client(address), method, request, {
      deadline: grpcDeadline(deadlineMs),
    }).catch((err: unknown) => {
      throw fromGrpcError(err);
    });
  }

  /** The coordinator address of a transactional id, from any bootstrap node (`avoid` if another is known). */
  async findCoordinator(transactionalId: string, avoid?: string): Promise<string> {
    const others = this.bootstrap.filter((a) => a !== avoid);
    const from = others.length > 0 ? others : this.bootstrap;
    const address = from[this.next++ % from.length]!;
    const r = await this.call(address, "FindCoordinator", {
      key: transactionalId,
      keyType: "TRANSACTION",
    });
    if (r.errorCode !== "NONE") throw new TernError(r.errorCode as ErrorName, r.errorMessage);
    return String(r.coordinator!.address); // set with every NONE answer
  }

  /** Calls the coordinator of transactionalId, following failovers until timeoutMs. */
  async txnCall<M extends CoordinatorMethod>(
    transactionalId: string,
    method: M,
    request: CoordinatorRequest<M>,
    timeoutMs = 60_000,
  ): Promise<CoordinatorResponse<M>> {
    const deadline = this.clock.monotonicMs() + timeoutMs;
    let last: TernError | undefined;
    for (let attempt = 0; this.clock.monotonicMs() < deadline; attempt++) {
      try {
        let address = this.cached.get(transactionalId);
        if (address === undefined) {
          address = await this.findCoordinator(transactionalId);
          this.cached.set(transactionalId, address);
        }
        const callMs = Math.max(1, Math.min(CALL_DEADLINE_MS, deadline - this.clock.monotonicMs()));
        // Hedged (libs/common/hedge.ts): a SIGSTOPped or cut-off leader holds the call until its
        // deadline otherwise. Not InitProducerId, whose copies are not harmless
        // (hedgeable-txn-calls.ts).
        if (!isHedgeableTxnCall(method)) return await this.call(address, method, request, callMs);
        const outcome = await hedged({
          address,
          send: (at) => this.call(at, method, request, callMs),
          relocate: async (silent) => {
            const other = await this.findCoordinator(transactionalId, silent);
            if (other !== silent) this.cached.set(transactionalId, other);
            return other;
          },
          delayMs: HEDGE_MS,
          relocatesMax: Math.ceil(callMs / HEDGE_MS),
        });
        if (!outcome.ok) throw outcome.error;
        return outcome.value;
      } catch (e) {
        last = fromGrpcError(e);
        // Tried again on a freshly found coordinator; CONCURRENT_TRANSACTIONS after a backoff.
        if (
          !FIND_COORDINATOR_CODES.has(last.errorName) &&
          last.errorName !== "CONCURRENT_TRANSACTIONS"
        )
          throw last;
        const address = this.cached.get(transactionalId);
        this.cached.delete(transactionalId);
        // A dead node's channel backs off before reconnecting; a fresh one connects at once when
        // a process is back at that address.
        if (last.errorName === "NETWORK_EXCEPTION" && address !== undefined)
          this.dropClient(address);
        const capMs = Math.min(
          RETRY_BACKOFF_MS_MAX,
          RETRY_BACKOFF_MS_MIN * 2 ** Math.min(attempt, 16),
        );
        await sleep(
          this.clock,
          Math.min(
            capMs / 2 + this.random.next() * (capMs / 2),
            Math.max(0, deadline - this.clock.monotonicMs()),
          ),
        );
      }
    }
    throw (
      last ??
      new TernError(
        "REQUEST_TIMED_OUT",
        `${method} of ${transactionalId} did not succeed within ${timeoutMs} ms`,
      )
    );
  }

  private client(address: string): TransactionCoordinatorClient {
    return this.clients.get<TransactionCoordinatorClient>(
      "TransactionCoordinator",
      loadTernProto().grpc.tern.v1.TransactionCoordinator,
      address,
    );
  }

  private dropClient(address: string): void {
    this.clients.drop(address);
  }

  close(): void {
    this.clients.close();
  }
}

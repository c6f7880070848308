// A thin promise client of tern.v1.TransactionCoordinator for tests, benchmarks and tools (the
// full SDK lives in libs/client): finds the coordinator of a transactional id with
// FindCoordinator and follows it across failovers, retrying only retriable codes, bounded by a
// deadline.
import * as grpc from "@grpc/grpc-js";
import { TernError, type ErrorName } from "../../libs/common/errors.js";
import { fromGrpcError } from "../../libs/common/grpc-errors.js";
import { loadTernProto } from "../../libs/common/proto.js";
import { channelCredentials } from "../../libs/server/tls/credentials.js";

export type CoordinatorMethod = "FindCoordinator" | "InitProducerId" | "AddPartitionsToTxn" | "AddOffsetsToTxn" | "EndTxn" | "ListTransactions" | "DescribeTransactions" | "AbortTransaction";

const CALL_DEADLINE_MS = 10_000;
const RETRY_BACKOFF_MS = 100;
const CLIENTS_MAX = 64;
/** Codes after which the same call is tried again (on a freshly found coordinator). */
const RETRY_CODES: ReadonlySet<ErrorName> = new Set<ErrorName>([
  "NOT_COORDINATOR", "COORDINATOR_LOAD_IN_PROGRESS", "COORDINATOR_NOT_AVAILABLE", "CONCURRENT_TRANSACTIONS",
  "NETWORK_EXCEPTION", "REQUEST_TIMED_OUT", "SHUTTING_DOWN",
]);

export class CoordinatorClient {
  private readonly clients = new Map<string, any>();
  private readonly cached = new Map<string, string>();
  private next = 0;

  /** bootstrap: addresses of coordinator nodes (any of them answers FindCoordinator). */
  constructor(private readonly bootstrap: readonly string[]) {
    if (bootstrap.length === 0) throw new Error("CoordinatorClient needs at least one coordinator address");
  }

  call<R = any>(address: string, method: CoordinatorMethod, request: unknown, deadlineMs = CALL_DEADLINE_MS): Promise<R> {
    const client = this.client(address);
    return new Promise((resolve, reject) => {
      client[method](request, { deadline: Date.now() + deadlineMs }, (err: unknown, res: R) => (err ? reject(fromGrpcError(err)) : resolve(res)));
    });
  }

  /** The coordinator address of a transactional id, from any bootstrap node. */
  async findCoordinator(transactionalId: string): Promise<string> {
    const address = this.bootstrap[this.next++ % this.bootstrap.length]!;
    const r = await this.call(address, "FindCoordinator", { key: transactionalId, keyType: "TRANSACTION" });
    if (r.errorCode !== "NONE") throw new TernError(r.errorCode as ErrorName, r.errorMessage);
    return String(r.coordinator.address);
  }

  /** Calls the coordinator of transactionalId, following failovers until timeoutMs. */
  async txnCall<R = any>(transactionalId: string, method: CoordinatorMethod, request: unknown, timeoutMs = 60_000): Promise<R> {
    const deadline = Date.now() + timeoutMs;
    let last: TernError | undefined;
    for (let attempt = 0; Date.now() < deadline; attempt++) {
      try {
        let address = this.cached.get(transactionalId);
        if (address === undefined) {
          address = await this.findCoordinator(transactionalId);
          this.cached.set(transactionalId, address);
        }
        return await this.call<R>(address, method, request, Math.max(1, Math.min(CALL_DEADLINE_MS, deadline - Date.now())));
      } catch (e) {
        last = fromGrpcError(e);
        if (!RETRY_CODES.has(last.errorName)) throw last;
        this.cached.delete(transactionalId);
        await new Promise((r) => setTimeout(r, RETRY_BACKOFF_MS));
      }
    }
    throw last ?? new TernError("REQUEST_TIMED_OUT", `${method} of ${transactionalId} did not succeed within ${timeoutMs} ms`);
  }

  private client(address: string): any {
    let c = this.clients.get(address);
    if (c === undefined) {
      if (this.clients.size >= CLIENTS_MAX) this.close();
      const Ctor = loadTernProto().grpc.tern.v1.TransactionCoordinator as typeof grpc.Client;
      c = new Ctor(address, channelCredentials());
      this.clients.set(address, c);
    }
    return c;
  }

  close(): void {
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }
}

// A thin promise client of tern.v1.TransactionCoordinator for tests, benchmarks and tools (the
// full SDK lives in libs/client): finds the coordinator of a transactional id with
// FindCoordinator and follows it across failovers, retrying only retriable codes, bounded by a
// deadline.
import * as grpc from "@grpc/grpc-js";
import { FIND_COORDINATOR_CODES, TernError, type ErrorName } from "../../libs/common/errors.js";
import { fromGrpcError } from "../../libs/common/grpc-errors.js";
import { loadTernProto } from "../../libs/common/proto.js";
import { channelCredentials } from "../../libs/server/tls/credentials.js";
import { GRPC_RECONNECT_OPTIONS } from "../../libs/server/grpc-options.js";

export type CoordinatorMethod = "FindCoordinator" | "InitProducerId" | "AddPartitionsToTxn" | "AddOffsetsToTxn" | "EndTxn" | "ListTransactions" | "DescribeTransactions" | "AbortTransaction";

const CALL_DEADLINE_MS = 10_000;
/** Backoff between attempts: doubling from the min to the max, half of it random. A failover
 * is usually found on the first or second retry (the survivors elect within ~100 ms of a crash). */
const RETRY_BACKOFF_MS_MIN = 20;
const RETRY_BACKOFF_MS_MAX = 400;
const CLIENTS_MAX = 64;

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
        // Tried again on a freshly found coordinator; CONCURRENT_TRANSACTIONS after a backoff.
        if (!FIND_COORDINATOR_CODES.has(last.errorName) && last.errorName !== "CONCURRENT_TRANSACTIONS") throw last;
        const address = this.cached.get(transactionalId);
        this.cached.delete(transactionalId);
        // A dead node's channel backs off before reconnecting; a fresh one connects at once when
        // a process is back at that address.
        if (last.errorName === "NETWORK_EXCEPTION" && address !== undefined) this.dropClient(address);
        const capMs = Math.min(RETRY_BACKOFF_MS_MAX, RETRY_BACKOFF_MS_MIN * 2 ** Math.min(attempt, 16));
        await new Promise((r) => setTimeout(r, Math.min(capMs / 2 + Math.random() * (capMs / 2), Math.max(0, deadline - Date.now()))));
      }
    }
    throw last ?? new TernError("REQUEST_TIMED_OUT", `${method} of ${transactionalId} did not succeed within ${timeoutMs} ms`);
  }

  private client(address: string): any {
    let c = this.clients.get(address);
    if (c === undefined) {
      if (this.clients.size >= CLIENTS_MAX) this.close();
      const Ctor = loadTernProto().grpc.tern.v1.TransactionCoordinator as typeof grpc.Client;
      c = new Ctor(address, channelCredentials(), GRPC_RECONNECT_OPTIONS);
      this.clients.set(address, c);
    }
    return c;
  }

  private dropClient(address: string): void {
    this.clients.get(address)?.close();
    this.clients.delete(address);
  }

  close(): void {
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }
}

// Calls the coordinator of a key: the transaction coordinator of a transactional id, or the
// group coordinator (a broker) of a group id. FindCoordinator is answered by any alive
// coordinator node (from metadata); answers are cached per key and dropped on
// NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE / COORDINATOR_LOAD_IN_PROGRESS / network errors,
// which are retried with backoff within a bounded time.
import { FIND_COORDINATOR_CODES, TernError, type ErrorName } from "../../common/errors.js";
import { hedged } from "../../common/hedge.js";
import { isHedgeableTxnCall } from "../../common/hedgeable-txn-calls.js";
import { retry, type RetryOptions } from "../retry/retry.js";
import type { MethodName, RequestOf, ResponseOf, ServiceName, Transport } from "./transport.js";
import type { MetadataCache } from "./metadata-cache.js";

export type CoordinatorKeyType = "TRANSACTION" | "GROUP";

const FIND_TIMEOUT_MS = 5_000;
const CACHED_KEYS_MAX = 10_000;
/**
 * A transaction coordinator call silent this long asks FindCoordinator elsewhere, and goes to the
 * node it names too (hedge.ts): a SIGSTOPped or cut-off leader would otherwise hold the call
 * until its deadline, long after the others elected a new one. Not InitProducerId, whose copies
 * are not harmless (hedgeable-txn-calls.ts).
 */
const TXN_HEDGE_MS = 500;
const HEDGE_RELOCATES_MAX = 60;

export class CoordinatorFinder {
  private readonly cache = new Map<string, string>();
  private next = 0;

  constructor(
    private readonly transport: Transport,
    private readonly metadata: MetadataCache,
  ) {}

  async find(keyType: CoordinatorKeyType, key: string): Promise<string> {
    const cacheKey = `${keyType}:${key}`;
    const hit = this.cache.get(cacheKey);
    if (hit) return hit;
    const address = await this.ask(keyType, key);
    if (this.cache.size >= CACHED_KEYS_MAX) this.cache.clear();
    this.cache.set(cacheKey, address);
    return address;
  }

  /** FindCoordinator at the next alive coordinator node (not `avoid`, unless it is the only one). */
  private async ask(keyType: CoordinatorKeyType, key: string, avoid?: string): Promise<string> {
    await this.metadata.current();
    let nodes = this.metadata.aliveNodes("coordinator");
    if (nodes.length === 0)
      nodes = (await this.metadata.refresh()).nodes.filter(
        (n) => n.role === "coordinator" && n.alive,
      );
    if (nodes.length === 0)
      throw new TernError("COORDINATOR_NOT_AVAILABLE", "no alive coordinator node in metadata");
    const others = nodes.filter((n) => n.address !== avoid);
    const from = others.length > 0 ? others : nodes;
    const node = from[this.next++ % from.length]!;
    const r = await this.transport.call(
      "TransactionCoordinator",
      node.address,
      "FindCoordinator",
      { key, keyType },
      FIND_TIMEOUT_MS,
    );
    if (r.errorCode !== "NONE")
      throw new TernError(r.errorCode as ErrorName, r.errorMessage || undefined);
    return String(r.coordinator?.address ?? "");
  }

  forget(keyType: CoordinatorKeyType, key: string): void {
    this.cache.delete(`${keyType}:${key}`);
  }

  /** One call to the key's coordinator, re-finding it and retrying retriable failures. */
  call<S extends ServiceName, M extends MethodName<S>>(
    keyType: CoordinatorKeyType,
    key: string,
    service: S,
    method: M,
    request: RequestOf<S, M>,
    options: RetryOptions & { requestTimeoutMs?: number } = {},
  ): Promise<ResponseOf<S, M>> {
    return retry(
      async () => {
        const address = await this.find(keyType, key);
        const send = (at: string): Promise<ResponseOf<S, M>> =>
          this.transport.call(service, at, method, request, options.requestTimeoutMs);
        try {
          if (keyType === "GROUP" || !isHedgeableTxnCall(String(method)))
            return await send(address);
          const outcome = await hedged({
            address,
            send,
            relocate: async (silent) => {
              const other = await this.ask(keyType, key, silent);
              if (other !== silent) this.cache.set(`${keyType}:${key}`, other);
              return other;
            },
            delayMs: TXN_HEDGE_MS,
            relocatesMax: HEDGE_RELOCATES_MAX,
          });
          if (!outcome.ok) throw outcome.error;
          return outcome.value;
        } catch (e) {
          if (e instanceof TernError && FIND_COORDINATOR_CODES.has(e.errorName)) {
            this.forget(keyType, key);
            if (e.errorName === "NOT_COORDINATOR" || e.errorName === "NETWORK_EXCEPTION")
              this.metadata.invalidate();
          }
          throw e;
        }
      },
      { attemptsMax: 30, timeoutMs: 60_000, backoffMsMax: 500, ...options },
    );
  }
}

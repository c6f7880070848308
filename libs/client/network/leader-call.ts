// One Broker call about a single partition, sent to its leader: finds the leader in
// metadata, refreshes metadata when it is unknown or the answer is NOT_LEADER_OR_FOLLOWER /
// UNKNOWN_TOPIC_OR_PARTITION / LEADER_NOT_AVAILABLE, and retries what is retriable.
import { REFRESH_METADATA_CODES, TernError, type ErrorName } from "../../common/errors.js";
import { retry, type RetryOptions } from "../retry/retry.js";
import type { MethodName, RequestOf, ResponseOf, Transport } from "./transport.js";
import type { MetadataCache } from "./metadata-cache.js";

export async function leaderAddress(
  metadata: MetadataCache,
  topic: string,
  partition: number,
): Promise<string> {
  await metadata.current();
  const address = metadata.leaderAddress(topic, partition);
  if (address) return address;
  await metadata.refresh();
  const again = metadata.leaderAddress(topic, partition);
  if (again) return again;
  const known = metadata.partition(topic, partition);
  throw new TernError(
    known ? "LEADER_NOT_AVAILABLE" : "UNKNOWN_TOPIC_OR_PARTITION",
    known ? `no leader for ${topic}/${partition}` : `${topic}/${partition} is not in metadata`,
  );
}

/** The outcome of a one-partition answer: its first partition's error code and message. */
export function firstPartitionError(response: {
  readonly partitions?: ReadonlyArray<{
    readonly errorCode?: string;
    readonly errorMessage?: string;
  }>;
}): { code: string; message?: string } {
  const first = response.partitions?.[0];
  return { code: first?.errorCode ?? "UNKNOWN_SERVER_ERROR", message: first?.errorMessage };
}

/**
 * Calls `method` on the partition's leader. `check` reads the per-partition result out of the
 * response: return its error code (a retriable one is retried on a refreshed leader).
 */
export async function leaderCall<M extends MethodName<"Broker">>(
  transport: Transport,
  metadata: MetadataCache,
  topic: string,
  partition: number,
  method: M,
  request: RequestOf<"Broker", M>,
  errorCodeOf: (response: ResponseOf<"Broker", M>) => { code: string; message?: string },
  options: RetryOptions & { requestTimeoutMs?: number } = {},
): Promise<ResponseOf<"Broker", M>> {
  return retry(
    async () => {
      const address = await leaderAddress(metadata, topic, partition);
      let res: ResponseOf<"Broker", M>;
      try {
        res = await transport.call("Broker", address, method, request, options.requestTimeoutMs);
      } catch (e) {
        if (e instanceof TernError && REFRESH_METADATA_CODES.has(e.errorName))
          metadata.invalidate();
        throw e;
      }
      const { code, message } = errorCodeOf(res);
      if (code !== "NONE") {
        if (REFRESH_METADATA_CODES.has(code as ErrorName)) metadata.invalidate();
        throw new TernError(code as ErrorName, message || undefined);
      }
      return res;
    },
    { attemptsMax: 20, timeoutMs: 30_000, backoffMsMax: 500, ...options },
  );
}

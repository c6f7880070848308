// FindCoordinator's wire layouts, v0-v5 (Kafka's FindCoordinatorRequest/Response.json): v1 adds
// the key type, the throttle time and an error message; v3 is the first flexible version; v4
// batches keys (KIP-699: one key type, many keys, one answer per key with its own error); v5
// only allows TRANSACTION_ABORTABLE in answers (KIP-890), which tern never gives, so its layout
// and meaning are v4's. v6's share-group key type is not served.
import { assert } from "../../libs/common/assert.js";
import { DecodeError } from "../../libs/common/decode-error.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";

export const KEY_TYPE_GROUP = 0;
export const KEY_TYPE_TRANSACTION = 1;

/** The first flexible version (request header v2, response header v1). */
export const FIND_COORDINATOR_FLEXIBLE_SINCE = 3;
/** The first version with batched keys. */
export const FIND_COORDINATOR_BATCHED_SINCE = 4;

/**
 * Keys one request may ask for. Kafka's admin client batches every group of a call into one
 * request; the bound keeps one answer's work finite (the frame bounds it too).
 */
export const FIND_COORDINATOR_KEYS_MAX = 10_000;

export interface FindCoordinatorRequest {
  readonly keyType: number;
  /** One key before v4. */
  readonly keys: readonly string[];
}

/** One key's answer: a node, or an error (Kafka answers an error with node -1, host "", port -1). */
export interface CoordinatorEntry {
  readonly key: string;
  readonly errorCode: number;
  readonly errorMessage: string | null;
  readonly nodeId: number;
  readonly host: string;
  readonly port: number;
}

export function decodeFindCoordinatorRequest(
  version: number,
  r: KafkaReader,
): FindCoordinatorRequest {
  const flexible = version >= FIND_COORDINATOR_FLEXIBLE_SINCE;
  const batched = version >= FIND_COORDINATOR_BATCHED_SINCE;
  const single = batched ? undefined : flexible ? r.compactString() : r.string();
  const keyType = version >= 1 ? r.int8() : KEY_TYPE_GROUP;
  const keys = batched ? r.compactArray((x) => x.compactString()) : [single!];
  if (keys.length > FIND_COORDINATOR_KEYS_MAX)
    throw new DecodeError("kafka", `FindCoordinator asks for ${keys.length} keys`);
  if (flexible) r.taggedFields();
  return { keyType, keys };
}

export function encodeFindCoordinatorResponse(
  version: number,
  entries: readonly CoordinatorEntry[],
): Buffer {
  const flexible = version >= FIND_COORDINATOR_FLEXIBLE_SINCE;
  const w = new KafkaWriter(64 + entries.length * 48);
  if (version >= 1) w.int32(0); // throttle_time_ms
  if (version >= FIND_COORDINATOR_BATCHED_SINCE) {
    w.compactArray(entries, (x, e) => {
      x.compactNullableString(e.key).int32(e.nodeId).compactNullableString(e.host).int32(e.port);
      x.int16(e.errorCode).compactNullableString(e.errorMessage).noTaggedFields();
    });
    return w.noTaggedFields().finish();
  }
  assert(entries.length === 1, "FindCoordinator before v4 answers exactly one key");
  const e = entries[0]!;
  w.int16(e.errorCode);
  if (version >= 1) {
    if (flexible) w.compactNullableString(e.errorMessage);
    else w.nullableString(e.errorMessage);
  }
  w.int32(e.nodeId);
  if (flexible) w.compactNullableString(e.host);
  else w.string(e.host);
  w.int32(e.port);
  if (flexible) w.noTaggedFields();
  return w.finish();
}

// InitProducerId v0-v5 (v2+ flexible; v5 only lets the answer be TRANSACTION_ABORTABLE,
// KIP-890, which tern never answers; v6's two-phase commit, KIP-939, is not served). Without a transactional id (librdkafka's
// enable.idempotence, sent to any node): a fresh producer id from a transaction coordinator, the
// same call the TypeScript Producer makes. With one (sent where FindCoordinator pointed): a
// coordinator's listener initialises it through its own InitProducerId handler (fencing an
// older instance, aborting its open transaction); a broker's answers NOT_COORDINATOR, so the
// client finds the coordinator again. v3+ (KIP-360) carries the producer id and epoch the
// client holds: librdkafka sends them to bump its epoch after an abortable error, and the
// coordinator then aborts the instance's own open transaction and bumps.
import { TernError } from "../../libs/common/errors.js";
import { requireAllowed } from "./kafka-access.js";
import { mayWriteIdempotently as mayWriteSomehow } from "../../libs/common/acl-access.js";
import { API } from "./api-versions.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { kafkaErrorCode } from "./kafka-errors.js";
import { thrownTxnErrorCode } from "./txn-errors.js";

export async function initProducerIdResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const flexible = version >= 2;
  const transactionalId = flexible ? r.compactNullableString() : r.nullableString();
  const transactionTimeoutMs = r.int32();
  // KIP-360: the identity the client holds, or -1/-1.
  const presentedId = version >= 3 ? r.int64() : -1n;
  const presentedEpoch = version >= 3 ? r.int16() : -1;
  if (flexible) r.taggedFields();
  let error = 0;
  let producerId = -1n;
  let producerEpoch = -1;
  try {
    // ACLs: WRITE on the transactional id; an idempotent producer needs IDEMPOTENT_WRITE on the
    // cluster or WRITE on some topic (Kafka 2.8+).
    if (transactionalId !== null && transactionalId !== "")
      requireAllowed(deps.access, "write", "transactional-id", transactionalId);
    else if (!mayWriteIdempotently(deps))
      throw new TernError(
        "CLUSTER_AUTHORIZATION_FAILED",
        `${deps.access?.principal} may not idempotent-write the cluster nor write any topic`,
      );
    if (transactionalId !== null && transactionalId !== "") {
      if (deps.transactions === undefined) error = kafkaErrorCode("NOT_COORDINATOR");
      else {
        const answer = await deps.transactions.initProducerId({
          // 0 asks for the coordinator's default timeout (60 s, Kafka's too).
          transactionalId,
          transactionTimeoutMs: Math.max(0, transactionTimeoutMs),
          producerId: presentedId.toString(),
          producerEpoch: presentedEpoch,
        });
        producerId = BigInt(answer.producerId);
        producerEpoch = Number(answer.producerEpoch);
      }
    } else {
      const answer = await deps.initProducerId();
      producerId = answer.producerId;
      producerEpoch = answer.producerEpoch;
    }
  } catch (e) {
    error = thrownTxnErrorCode(e, API.InitProducerId, version, deps.logger);
    // No producer id from any coordinator: retriable for the client, as Kafka's broker answers.
    if (error === -1) error = kafkaErrorCode("COORDINATOR_NOT_AVAILABLE");
    deps.logger.debug({ err: e, transactionalId }, "kafka InitProducerId refused");
  }
  if (error !== 0) {
    producerId = -1n;
    producerEpoch = -1;
  }
  const w = new KafkaWriter(32).int32(0).int16(error).int64(producerId).int16(producerEpoch);
  if (flexible) w.noTaggedFields();
  return w.finish();
}

function mayWriteIdempotently(deps: KafkaDeps): boolean {
  return mayWriteSomehow(
    deps.access,
    (deps.metadata()?.topics ?? []).filter((t) => t.role === "broker").map((t) => t.name),
  );
}

// InitProducerId v0-v1 for idempotent producers (librdkafka's enable.idempotence): a fresh
// producer id from a transaction coordinator, the same call the TypeScript Producer makes. A
// transactional id is refused with COORDINATOR_NOT_AVAILABLE: transactions need the
// coordinators' own Kafka listener (not served yet, docs/kafka-protocol.md).
import { isTernError } from "../../libs/common/errors.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { kafkaErrorCode } from "./kafka-errors.js";

const COORDINATOR_NOT_AVAILABLE = 15;

export async function initProducerIdResponse(deps: KafkaDeps, _version: number, r: KafkaReader): Promise<Buffer> {
  const transactionalId = r.nullableString();
  r.int32(); // transaction timeout: transactional ids are not served here
  let error = 0;
  let producerId = -1n;
  let producerEpoch = -1;
  if (transactionalId !== null && transactionalId !== "") error = COORDINATOR_NOT_AVAILABLE;
  else {
    try {
      const answer = await deps.initProducerId();
      producerId = answer.producerId;
      producerEpoch = answer.producerEpoch;
    } catch (e) {
      error = isTernError(e) ? kafkaErrorCode(e.errorName) : COORDINATOR_NOT_AVAILABLE;
      deps.logger.warn({ err: e }, "kafka InitProducerId: no producer id from the coordinators");
    }
  }
  return new KafkaWriter(32).int32(0).int16(error).int64(producerId).int16(producerEpoch).finish();
}

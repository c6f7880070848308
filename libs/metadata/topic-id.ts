// Topic ids (Kafka's KIP-516): a random 16-byte UUID chosen by the controller leader when a topic
// is created, written in the entry that creates it (apply never draws randomness), kept in the
// metadata. Held as Kafka prints them: the 16 bytes in URL-safe base64 without padding (22
// characters), what `kafka-topics --describe` and Kafka's Uuid.toString() show.
import { randomBytes } from "node:crypto";

export const TOPIC_ID_BYTES = 16;
const TOPIC_ID_PATTERN = /^[A-Za-z0-9_-]{21}[AQgw]$/;

/**
 * A new random id, never the zero id ("no id") nor one whose text starts with "-" (Kafka's
 * Uuid.randomUuid redraws those so command-line tools do not read them as options).
 */
export function newTopicId(): string {
  for (;;) {
    const bytes = randomBytes(TOPIC_ID_BYTES);
    const id = bytes.toString("base64url");
    if (!id.startsWith("-") && bytes.some((b) => b !== 0)) return id;
  }
}

/** True for an id in its text form (22 base64url characters that decode to 16 bytes). */
export function isTopicId(id: unknown): id is string {
  return typeof id === "string" && TOPIC_ID_PATTERN.test(id) && id !== topicIdText(ZERO_TOPIC_ID);
}

/** Kafka's Uuid.ZERO_UUID: "no topic id". */
export const ZERO_TOPIC_ID: Buffer = Buffer.alloc(TOPIC_ID_BYTES);

/** The 16 bytes of an id (the zero id for undefined: a topic without one). */
export function topicIdBytes(id: string | undefined): Buffer {
  return id === undefined ? ZERO_TOPIC_ID : Buffer.from(id, "base64url");
}

/** The text form of 16 id bytes. */
export function topicIdText(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64url");
}

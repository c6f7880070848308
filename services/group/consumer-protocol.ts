// Kafka's ConsumerProtocol: the bytes classic-group members of protocol type "consumer" put in
// JoinGroup (Subscription) and the leader hands out through SyncGroup (Assignment). The
// coordinator passes them along unread; it parses them only to show topics and partitions
// (describe) and to refuse deleting offsets of a subscribed topic. Layouts from Kafka's
// ConsumerProtocolSubscription.json / ConsumerProtocolAssignment.json (all versions start with
// the same fields). Parsing never throws: malformed bytes read as empty.
import { KafkaReader } from "../../libs/records/kafka-codec.js";
import { isDecodeError } from "../../libs/common/decode-error.js";

export interface ConsumerSubscription {
  readonly topics: readonly string[];
}

export interface ConsumerAssignment {
  readonly partitions: ReadonlyArray<[string, number[]]>;
}

/** Topics of a Subscription (version, topics, user data, ...). */
export function parseSubscription(bytes: Uint8Array): ConsumerSubscription {
  return guarded(
    bytes,
    (r) => {
      r.int16(); // version
      return { topics: r.array((x) => x.string()) };
    },
    { topics: [] },
  );
}

/** Partitions of an Assignment (version, [topic, [partition]], user data). */
export function parseAssignment(bytes: Uint8Array): ConsumerAssignment {
  return guarded(
    bytes,
    (r) => {
      r.int16(); // version
      return {
        partitions: r.array((x): [string, number[]] => [x.string(), x.array((y) => y.int32())]),
      };
    },
    { partitions: [] },
  );
}

function guarded<T>(bytes: Uint8Array, read: (r: KafkaReader) => T, empty: T): T {
  if (bytes.byteLength < 2) return empty;
  try {
    return read(new KafkaReader(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)));
  } catch (e) {
    if (isDecodeError(e, "kafka")) return empty;
    throw e;
  }
}

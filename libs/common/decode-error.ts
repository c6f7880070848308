// The one error for bytes that do not decode: a Kafka request or record batch, a Raft message
// or batch frame, a stored command or group entry, a compressed payload. `what` names the
// format, so a caller that refuses one format's garbage (with CORRUPT_MESSAGE, INVALID_REQUEST,
// a closed connection) does not swallow another's.
export type DecodeFormat =
  | "kafka" // Kafka protocol frames and record sections (libs/records/kafka-codec.ts)
  | "batch-header" // a stored Kafka record batch's header (libs/records/batch-header.ts)
  | "compression" // a compressed payload, damaged or inflating past its bound
  | "raft" // Raft messages, entries and snapshot envelopes (libs/raft/codec.ts)
  | "raft-batch" // RaftBatch wire frames (libs/raft-host/batch-frame.ts)
  | "offsets" // __consumer_offsets entries (services/group/offsets-codec.ts)
  | "command"; // controller metadata commands (services/controller/command-codec.ts)

export class DecodeError extends Error {
  constructor(
    readonly what: DecodeFormat,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = "DecodeError";
  }
}

/** True for a DecodeError (of format `what`, when given). */
export function isDecodeError(e: unknown, what?: DecodeFormat): e is DecodeError {
  return e instanceof DecodeError && (what === undefined || e.what === what);
}

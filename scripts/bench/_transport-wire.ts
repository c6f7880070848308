// What the two sides of `npm run bench -- transport` share: the mechanisms, the raw TCP frame
// header, and a gRPC service that moves bytes as they are (no protobuf), so the figures are
// the transport's alone.
import type * as grpc from "@grpc/grpc-js";

export type EchoMode = "tcp" | "grpc";
export const FRAME_HEADER_BYTES = 4;

const bytes = (b: Buffer): Buffer => b;

export const ECHO_SERVICE: grpc.ServiceDefinition = {
  Stream: {
    path: "/tern.bench.Echo/Stream",
    requestStream: true,
    responseStream: true,
    requestSerialize: bytes,
    requestDeserialize: bytes,
    responseSerialize: bytes,
    responseDeserialize: bytes,
  },
  Unary: {
    path: "/tern.bench.Echo/Unary",
    requestStream: false,
    responseStream: false,
    requestSerialize: bytes,
    requestDeserialize: bytes,
    responseSerialize: bytes,
    responseDeserialize: bytes,
  },
};

/**
 * Reads length-prefixed frames from a byte stream: onFrame gets each whole frame (its prefix
 * included) as it completes, however the stream splits or joins them.
 */
export function frameReader(onFrame: (frame: Buffer) => void): (chunk: Buffer) => void {
  let pending: Buffer = Buffer.alloc(0);
  return (chunk) => {
    pending = pending.length > 0 ? Buffer.concat([pending, chunk]) : chunk;
    while (pending.length >= FRAME_HEADER_BYTES) {
      const end = FRAME_HEADER_BYTES + pending.readUInt32BE(0);
      if (pending.length < end) break;
      onFrame(pending.subarray(0, end));
      pending = pending.subarray(end);
    }
  };
}

// Fetch answers framed in place. grpc-js frames every answer it sends by copying it into a new
// buffer 5 bytes longer (a compressed flag and a u32 length): for a Fetch answer of 8 MiB that
// is 8 MiB more copied and first touched (page faults) per answer. The Fetch codec writes its
// answer after 5 reserved bytes instead (allocFramed), and the server call sends such a buffer
// with those bytes filled in, uncopied. Best effort through grpc-js internals, checked when
// installed (the patched method must frame exactly as this file expects): if they change,
// answers are copied as before.
import { createRequire } from "node:module";

/** grpc's message prefix: u8 compressed flag, u32 big-endian length. */
const FRAME_HEADER_BYTES = 5;

/** Bodies written by allocFramed: the 5 bytes before each are theirs. */
const framedBodies = new WeakSet<Buffer>();

/** A body buffer of bodyBytes whose frame header can be written in front of it without a copy. */
export function allocFramed(bodyBytes: number): Buffer {
  const whole = Buffer.allocUnsafe(FRAME_HEADER_BYTES + bodyBytes);
  const body = whole.subarray(FRAME_HEADER_BYTES);
  framedBodies.add(body);
  return body;
}

/** The framed message around a body from allocFramed (uncompressed), or undefined for any other buffer. */
export function framedMessage(body: Buffer): Buffer | undefined {
  if (!framedBodies.has(body) || body.byteOffset < FRAME_HEADER_BYTES) return undefined;
  const whole = Buffer.from(
    body.buffer,
    body.byteOffset - FRAME_HEADER_BYTES,
    body.byteLength + FRAME_HEADER_BYTES,
  );
  whole.writeUInt8(0, 0);
  whole.writeUInt32BE(body.byteLength, 1);
  return whole;
}

type Serialize = (value: unknown) => Buffer;
interface ServerCallLike {
  handler: { serialize: Serialize };
}
type SerializeMessage = (this: ServerCallLike, value: unknown) => Buffer;

let installed: boolean | undefined;

/**
 * Patches grpc-js's server call so that bodies from allocFramed go out framed in place. Returns
 * whether it is in effect (once per process; later calls answer the first's result).
 */
export function installFramedResponses(): boolean {
  if (installed !== undefined) return installed;
  installed = false;
  let proto: { serializeMessage?: unknown } | undefined;
  try {
    const require = createRequire(import.meta.url);
    const mod = require("@grpc/grpc-js/build/src/server-interceptors.js") as {
      BaseServerInterceptingCall?: { prototype?: { serializeMessage?: unknown } };
    };
    proto = mod.BaseServerInterceptingCall?.prototype;
  } catch {
    return false;
  }
  if (proto === undefined || typeof proto.serializeMessage !== "function") return false;
  const original = proto.serializeMessage as SerializeMessage;
  if (!framesAsExpected(original)) return false;
  proto.serializeMessage = function (this: ServerCallLike, value: unknown): Buffer {
    const body = this.handler.serialize(value);
    // Any other answer is framed by grpc-js itself, from the body already serialized.
    return framedMessage(body) ?? original.call({ handler: { serialize: () => body } }, value);
  };
  installed = true;
  return true;
}

/** The original must read nothing but handler.serialize and frame as [0, u32 length, body]. */
function framesAsExpected(original: SerializeMessage): boolean {
  try {
    const body = Buffer.from([7, 8, 9]);
    const out = original.call({ handler: { serialize: () => body } }, undefined);
    return Buffer.isBuffer(out) && out.equals(Buffer.from([0, 0, 0, 0, 3, 7, 8, 9]));
  } catch {
    return false;
  }
}

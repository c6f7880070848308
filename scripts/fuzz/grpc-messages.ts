// gRPC calls for the fuzzer: every method of every tern service, called with raw bytes (identity
// serializers, so the server's own decoder meets them): random protobuf wire data (fields of
// every wire type with telling values, nested messages, lengths that overrun), mutations of
// well-formed encodings, and plain garbage. Streaming methods get a few messages, then are
// ended or cancelled within a bound. Answers and errors are ignored: only the server's survival
// and service count.
import * as grpc from "@grpc/grpc-js";
import { loadTernProto } from "../../libs/common/proto.js";
import type { SeededRandom } from "./seeded-random.js";

interface Method {
  readonly path: string;
  readonly requestStream: boolean;
  readonly responseStream: boolean;
  /** Encodes a plain object as the method's request message (for well-formed seeds). */
  readonly encode: (value: object) => Buffer;
}

/** Every method of every service in proto/tern/v1. */
export function ternMethods(): Method[] {
  const { packageDefinition } = loadTernProto();
  const out: Method[] = [];
  for (const definition of Object.values(packageDefinition)) {
    if (typeof definition !== "object" || definition === null || "format" in definition) continue;
    for (const m of Object.values(definition as grpc.ServiceDefinition)) {
      out.push({
        path: m.path,
        requestStream: m.requestStream,
        responseStream: m.responseStream,
        encode: (value) => m.requestSerialize(value),
      });
    }
  }
  return out;
}

const identity = (b: Buffer): Buffer => b;
const CALL_DEADLINE_MS = 2_000;
const STREAM_OPEN_MS = 300;

export class GrpcCaller {
  private readonly client: grpc.Client;

  constructor(
    address: string,
    private readonly rng: SeededRandom,
    private readonly methods: readonly Method[],
  ) {
    this.client = new grpc.Client(address, grpc.credentials.createInsecure(), {
      "grpc.max_receive_message_length": 16 * 1024 * 1024,
    });
  }

  /** One call of a random method with a random or mutated message; settles within a bound. */
  async callOnce(): Promise<void> {
    const m = this.rng.pick(this.methods);
    const messages = Array.from({ length: m.requestStream ? 1 + this.rng.int(4) : 1 }, () =>
      this.message(m),
    );
    const deadline = Date.now() + CALL_DEADLINE_MS;
    await new Promise<void>((resolve) => {
      const done = (): void => resolve();
      if (!m.requestStream && !m.responseStream) {
        this.client.makeUnaryRequest(m.path, identity, identity, messages[0]!, { deadline }, done);
      } else if (!m.requestStream) {
        const call = this.client.makeServerStreamRequest(m.path, identity, identity, messages[0]!, {
          deadline,
        });
        call.on("data", () => undefined);
        call.on("error", done);
        call.on("end", done);
        setTimeout(() => call.cancel(), STREAM_OPEN_MS).unref();
      } else if (!m.responseStream) {
        const call = this.client.makeClientStreamRequest(
          m.path,
          identity,
          identity,
          { deadline },
          done,
        );
        for (const msg of messages) call.write(msg);
        if (this.rng.chance(0.5)) call.end();
        else setTimeout(() => call.cancel(), STREAM_OPEN_MS).unref();
      } else {
        const call = this.client.makeBidiStreamRequest(m.path, identity, identity, { deadline });
        call.on("data", () => undefined);
        call.on("error", done);
        call.on("end", done);
        for (const msg of messages) call.write(msg);
        call.end();
        setTimeout(() => call.cancel(), STREAM_OPEN_MS).unref();
      }
      // Whatever the call does, the fuzzer moves on at the deadline.
      setTimeout(done, CALL_DEADLINE_MS + 500).unref();
    });
  }

  close(): void {
    this.client.close();
  }

  private message(m: Method): Buffer {
    const r = this.rng;
    switch (r.int(4)) {
      case 0:
        return r.bytes(r.int(64));
      case 1:
        return mutate(r, this.wellFormed(m));
      default:
        return randomWire(r, 0);
    }
  }

  /** A well-formed request: defaults, or a few fields of telling values where the encoder takes them. */
  private wellFormed(m: Method): Buffer {
    try {
      return m.encode({});
    } catch {
      return Buffer.alloc(0);
    }
  }
}

/** Random protobuf wire data: fields 1..20 of every wire type, nested up to depth 3. */
export function randomWire(r: SeededRandom, depth: number): Buffer {
  const parts: Buffer[] = [];
  for (let i = 0, n = r.int(8); i < n; i++) {
    const field = 1 + r.int(20);
    const wireType = r.pick([0, 0, 1, 2, 2, 2, 5]);
    parts.push(varint(field * 8 + wireType));
    switch (wireType) {
      case 0:
        parts.push(varint(r.pick([0, 1, 2, 127, 128, 0xffffffff, 2 ** 53 - 1, r.int(1_000_000)])));
        break;
      case 1:
        parts.push(r.bytes(8));
        break;
      case 5:
        parts.push(r.bytes(4));
        break;
      default: {
        const payload =
          depth < 3 && r.chance(0.5)
            ? randomWire(r, depth + 1)
            : r.chance(0.5)
              ? Buffer.from(`fz-${r.int(1000)}`)
              : r.bytes(r.int(32));
        // A length that overruns the message now and then.
        parts.push(
          varint(r.chance(0.1) ? payload.byteLength + 1 + r.int(1000) : payload.byteLength),
        );
        parts.push(payload);
      }
    }
  }
  return Buffer.concat(parts);
}

function mutate(r: SeededRandom, b: Buffer): Buffer {
  const out = Buffer.concat([b, randomWire(r, 1)]);
  for (let i = 0, n = r.int(4); i < n && out.byteLength > 0; i++)
    out[r.int(out.byteLength)]! ^= 1 << r.int(8);
  return r.chance(0.3) ? out.subarray(0, r.int(out.byteLength + 1)) : out;
}

function varint(v: number): Buffer {
  const bytes: number[] = [];
  let x = v;
  while (x >= 0x80) {
    bytes.push((x % 0x80) | 0x80);
    x = Math.floor(x / 0x80);
  }
  bytes.push(x);
  return Buffer.from(bytes);
}

// A minimal Kafka client connection for the fuzzer and its liveness checks: writes frames as
// given and collects answer frames until the broker closes the connection or a bounded time
// passes, whichever is first. Nothing here trusts what it receives.
import { connect, type Socket } from "node:net";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";

export interface KafkaAnswer {
  readonly correlationId: number;
  readonly body: KafkaReader;
}

export class KafkaProbe {
  private buf = Buffer.alloc(0);
  private waiters: Array<() => void> = [];
  closed = false;

  private constructor(private readonly socket: Socket) {
    socket.on("data", (d: Buffer) => {
      // Answers are only kept up to a bound: a fuzzed request may be answered at length.
      if (this.buf.byteLength < ANSWER_BYTES_KEPT_MAX) this.buf = Buffer.concat([this.buf, d]);
      for (const w of this.waiters.splice(0)) w();
    });
    socket.on("close", () => {
      this.closed = true;
      for (const w of this.waiters.splice(0)) w();
    });
    socket.on("error", () => undefined);
  }

  static open(port: number, host = "127.0.0.1", timeoutMs = 5_000): Promise<KafkaProbe> {
    return new Promise((resolve, reject) => {
      const s = connect(port, host);
      const timer = setTimeout(() => {
        s.destroy();
        reject(new Error(`no connection to ${host}:${port} within ${timeoutMs} ms`));
      }, timeoutMs);
      s.once("connect", () => {
        clearTimeout(timer);
        resolve(new KafkaProbe(s));
      });
      s.once("error", (e) => {
        clearTimeout(timer);
        reject(e);
      });
    });
  }

  write(frame: Buffer): void {
    if (!this.closed) this.socket.write(frame);
  }

  /** The next whole answer frame, or undefined when the connection closed or timeoutMs passed. */
  async next(timeoutMs: number): Promise<KafkaAnswer | undefined> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.buf.byteLength >= 4) {
        const size = this.buf.readInt32BE(0);
        if (size >= 4 && this.buf.byteLength >= 4 + size) {
          const frame = this.buf.subarray(4, 4 + size);
          this.buf = this.buf.subarray(4 + size);
          const r = new KafkaReader(frame);
          return { correlationId: r.int32(), body: r };
        }
      }
      const left = deadline - Date.now();
      if (this.closed || left <= 0) return undefined;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 100));
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  close(): void {
    this.socket.destroy();
  }
}

const ANSWER_BYTES_KEPT_MAX = 8 * 1024 * 1024;

/** A request frame: size, header v1 (v2 with tagged fields when flexible), body. */
export function requestFrame(
  apiKey: number,
  version: number,
  correlationId: number,
  body: Buffer,
  flexible: boolean,
): Buffer {
  const w = new KafkaWriter(64 + body.byteLength);
  const at = w.reserveInt32();
  w.int16(apiKey).int16(version).int32(correlationId).nullableString("tern-fuzz");
  if (flexible) w.noTaggedFields();
  w.raw(body);
  w.fillInt32(at, w.pos - 4);
  return Buffer.from(w.finish());
}

// A Kafka protocol connection at the frame level, for tests of APIs that no client installed
// here sends (librdkafka 2.0, kafkajs 2.2 and kcat lack them): request header v1, or v2 for a
// flexible request; each answer read back as its correlation id and a reader over its body.
import { connect as tlsConnect, type ConnectionOptions } from "node:tls";
import { connect, type Socket } from "node:net";
import { KafkaReader, KafkaWriter } from "../../../libs/records/kafka-codec.js";

/** One request frame: size, header (v2 with its tagged fields when flexible), body. */
export function kafkaRequest(
  apiKey: number,
  version: number,
  correlationId: number,
  body: (w: KafkaWriter) => void = () => undefined,
  flexible = false,
): Buffer {
  const w = new KafkaWriter(64);
  const at = w.reserveInt32();
  w.int16(apiKey).int16(version).int32(correlationId).nullableString("test-client");
  if (flexible) w.noTaggedFields();
  body(w);
  w.fillInt32(at, w.pos - 4);
  return Buffer.from(w.finish());
}

export class KafkaRawConnection {
  private buf = Buffer.alloc(0);
  private waiters: Array<() => void> = [];
  closed = false;
  private correlation = 0;
  constructor(readonly s: Socket) {
    s.on("data", (d: Buffer) => {
      this.buf = Buffer.concat([this.buf, d]);
      for (const w of this.waiters.splice(0)) w();
    });
    s.on("close", () => {
      this.closed = true;
      for (const w of this.waiters.splice(0)) w();
    });
    s.on("error", () => undefined); // seen as closed
  }

  static open(port: number, host = "127.0.0.1"): Promise<KafkaRawConnection> {
    return new Promise((resolve, reject) => {
      const s = connect(port, host, () => resolve(new KafkaRawConnection(s)));
      s.once("error", reject);
    });
  }

  /** A TLS connection (options: ca, and cert/key for a client certificate). */
  static openTls(
    port: number,
    options: ConnectionOptions,
    host = "127.0.0.1",
  ): Promise<KafkaRawConnection> {
    return new Promise((resolve, reject) => {
      const s = tlsConnect({ port, host, ...options }, () => resolve(new KafkaRawConnection(s)));
      s.once("error", reject);
    });
  }

  /** The next response frame (correlation id + body), or undefined once the connection closed. */
  async next(timeoutMs = 5_000): Promise<{ correlationId: number; body: KafkaReader } | undefined> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.buf.byteLength >= 4 && this.buf.byteLength >= 4 + this.buf.readInt32BE(0)) {
        const size = this.buf.readInt32BE(0);
        const frame = this.buf.subarray(4, 4 + size);
        this.buf = this.buf.subarray(4 + size);
        const r = new KafkaReader(frame);
        return { correlationId: r.int32(), body: r };
      }
      if (this.closed) return undefined;
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
    throw new Error("no response in time");
  }

  /** Sends a flexible request and answers its body past the response header v1. */
  async flexibleCall(
    apiKey: number,
    version: number,
    body: (w: KafkaWriter) => void,
    timeoutMs = 10_000,
  ): Promise<KafkaReader> {
    const id = ++this.correlation;
    this.s.write(kafkaRequest(apiKey, version, id, body, true));
    const answer = await this.next(timeoutMs);
    if (answer === undefined)
      throw new Error(`connection closed before the answer to api ${apiKey} v${version}`);
    if (answer.correlationId !== id)
      throw new Error(`answer for correlation id ${answer.correlationId}, expected ${id}`);
    answer.body.taggedFields();
    return answer.body;
  }

  close(): void {
    this.s.destroy();
  }
}

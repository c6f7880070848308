// Kafka request frames for the fuzzer: for every API key and version the listener serves
// (api-versions.ts, flexible and not), a body of random protocol primitives (ints of telling
// values, strings, arrays and counts, tagged fields, record batches of every codec), valid
// requests of the main APIs, and mutations of either: truncations (size prefix kept or fixed),
// bit flips, extreme ints written over any field, huge size prefixes, unknown keys and versions.
import { compress, CODECS, type CompressionCodec } from "../../libs/records/compression.js";
import { KafkaWriter } from "../../libs/records/kafka-codec.js";
import { API, flexibleRequest, SUPPORTED } from "../../services/kafka/api-versions.js";
import { encodeBatch, recordsSection } from "../../services/kafka/record-batch.js";
import { requestFrame } from "./kafka-probe.js";
import type { SeededRandom } from "./seeded-random.js";

/** Every (api key, version) the listener serves. */
export const SERVED: ReadonlyArray<{ apiKey: number; version: number }> = [...SUPPORTED].flatMap(
  ([apiKey, range]) =>
    Array.from({ length: range.max - range.min + 1 }, (_, i) => ({
      apiKey,
      version: range.min + i,
    })),
);

const TELLING_INT32 = [0, 1, -1, 2, 0x7fffffff, -0x80000000, 65_536, 1_000_000, 100 * 1024 * 1024];
const TELLING_INT16 = [0, 1, -1, 0x7fff, -0x8000, 255];

/** Record batches of every codec (and a few broken ones), made once: the raw material of Produce bodies. */
export async function sampleBatches(): Promise<Buffer[]> {
  const records = Array.from({ length: 20 }, (_, i) => ({
    key: i % 3 === 0 ? null : Buffer.from(`key-${i}`),
    value: Buffer.alloc(200 + i * 37, 0x61 + (i % 26)),
    headers: i % 2 === 0 ? [{ key: "h", value: Buffer.from("v") }] : [],
    timestampMs: Date.now(),
  }));
  const batch = {
    baseOffset: 0n,
    producerId: -1n,
    producerEpoch: -1,
    baseSequence: -1,
    isTransactional: false,
    records,
  };
  const out: Buffer[] = [];
  for (const codec of CODECS as readonly CompressionCodec[]) {
    const w = new KafkaWriter(4096);
    if (codec === "none") encodeBatch(w, batch);
    else encodeBatch(w, batch, { codec, section: await compress(codec, recordsSection(batch)) });
    out.push(Buffer.from(w.finish()));
  }
  return out;
}

export class KafkaFrameSource {
  private correlation = 0;

  constructor(
    private readonly rng: SeededRandom,
    private readonly batches: readonly Buffer[],
    private readonly topic: string,
  ) {}

  /** One frame: a valid or random request for a served API, mutated more often than not. */
  next(): Buffer {
    const r = this.rng;
    const id = ++this.correlation;
    const { apiKey, version } = r.pick(SERVED);
    const flexible = flexibleRequest(apiKey, version);
    const body =
      r.chance(0.4) && VALID[apiKey] !== undefined
        ? VALID[apiKey]!(r, version, this.topic, this.batches)
        : this.randomBody(flexible);
    let frame = requestFrame(apiKey, version, id, body, flexible);
    if (r.chance(0.03)) frame = requestFrame(r.int(0x8000), r.int(40), id, body, r.chance(0.5));
    const mutations = r.chance(0.35) ? 0 : 1 + r.int(3);
    for (let i = 0; i < mutations; i++) frame = this.mutate(frame);
    return frame;
  }

  private mutate(frame: Buffer): Buffer {
    const r = this.rng;
    const f = Buffer.from(frame);
    switch (r.int(7)) {
      case 0: {
        // Truncated body, size prefix fixed: "frame ends early".
        const cut = 4 + r.int(Math.max(1, f.byteLength - 4));
        const t = f.subarray(0, cut);
        if (t.byteLength >= 4) t.writeInt32BE(t.byteLength - 4, 0);
        return t;
      }
      case 1: {
        for (let i = 0, n = 1 + r.int(8); i < n && f.byteLength > 4; i++)
          f[4 + r.int(f.byteLength - 4)]! ^= 1 << r.int(8);
        return f;
      }
      case 2: {
        // An extreme int32 over any field: lengths, counts, offsets.
        if (f.byteLength >= 16)
          f.writeInt32BE(r.pick(TELLING_INT32), 12 + r.int(f.byteLength - 15));
        return f;
      }
      case 3: {
        if (f.byteLength >= 8) f.writeInt16BE(r.pick(TELLING_INT16), 4 + r.int(f.byteLength - 5));
        return f;
      }
      case 4: {
        // Junk appended, size fixed.
        const out = Buffer.concat([f, r.bytes(1 + r.int(64))]);
        out.writeInt32BE(out.byteLength - 4, 0);
        return out;
      }
      case 5: {
        // Truncated, size prefix left claiming the whole: the rest never comes on this frame.
        return f.subarray(0, Math.max(4, r.int(f.byteLength)));
      }
      default: {
        // A size prefix out of bounds, or huge.
        f.writeInt32BE(r.pick([-1, 0, 3, 7, 0x7fffffff, 100 * 1024 * 1024 + 1]), 0);
        return f;
      }
    }
  }

  /** A body of random protocol primitives, compact ones when the version is flexible. */
  private randomBody(flexible: boolean): Buffer {
    const r = this.rng;
    const w = new KafkaWriter(256);
    for (let i = 0, n = r.int(16); i < n; i++) {
      switch (r.int(10)) {
        case 0:
          w.int8(r.int(256) - 128);
          break;
        case 1:
          w.int16(r.pick(TELLING_INT16));
          break;
        case 2:
          w.int32(r.chance(0.5) ? r.pick(TELLING_INT32) : r.int(8));
          break;
        case 3:
          w.int64(r.chance(0.5) ? BigInt(r.int(1000)) : -1n);
          break;
        case 4:
          if (flexible) w.compactNullableString(r.chance(0.2) ? null : this.name());
          else w.nullableString(r.chance(0.2) ? null : this.name());
          break;
        case 5:
          // An array count: small (what follows is its elements), -1, or huge.
          if (flexible) w.uvarint(r.chance(0.8) ? r.int(4) : r.pick([0x7fffffff, 1_000_000]));
          else w.int32(r.chance(0.8) ? r.int(4) : r.pick([-1, 0x7fffffff, 1_000_000]));
          break;
        case 6:
          // Tagged fields: count, then tag and size each.
          w.uvarint(r.int(3));
          w.uvarint(r.int(10));
          w.uvarint(r.chance(0.8) ? r.int(8) : 0x7fffffff);
          break;
        case 7:
          w.nullableBytes(r.pick(this.batches));
          break;
        case 8:
          w.raw(r.bytes(r.int(32)));
          break;
        default:
          w.string(this.topic);
          break;
      }
    }
    return Buffer.from(w.finish());
  }

  private name(): string {
    const r = this.rng;
    return r.chance(0.5) ? this.topic : `fz-${r.int(1_000_000).toString(36)}`.repeat(1 + r.int(3));
  }
}

type ValidBody = (
  r: SeededRandom,
  version: number,
  topic: string,
  batches: readonly Buffer[],
) => Buffer;

/** Well-formed bodies of the main APIs (non-flexible versions, which is all these serve). */
const VALID: Partial<Record<number, ValidBody>> = {
  [API.Produce]: (r, version, topic, batches) => {
    const w = new KafkaWriter(4096);
    if (version >= 3) w.nullableString(null);
    w.int16(r.pick([1, -1, 0])).int32(5_000);
    const records = r.chance(0.2)
      ? Buffer.concat([r.pick(batches), r.pick(batches)])
      : r.pick(batches);
    w.int32(1).string(topic).int32(1).int32(r.int(2)).nullableBytes(records);
    return Buffer.from(w.finish());
  },
  [API.Fetch]: (r, version, topic) => {
    const w = new KafkaWriter(128);
    w.int32(-1)
      .int32(r.int(200))
      .int32(1)
      .int32(r.pick([1024, 1024 * 1024]))
      .int8(r.int(2));
    if (version >= 7) w.int32(0).int32(-1);
    w.int32(1).string(topic).int32(1).int32(r.int(2));
    if (version >= 9) w.int32(-1);
    w.int64(BigInt(r.int(100)));
    if (version >= 5) w.int64(-1n);
    w.int32(r.pick([1024, 1024 * 1024]));
    if (version >= 7) w.int32(0);
    if (version >= 11) w.string("");
    return Buffer.from(w.finish());
  },
  [API.Metadata]: (r, version, topic) => {
    const w = new KafkaWriter(64);
    if (r.chance(0.3)) w.int32(-1);
    else w.int32(1).string(topic);
    if (version >= 4) w.bool(false);
    if (version >= 8) w.bool(false).bool(false);
    return Buffer.from(w.finish());
  },
  [API.ListOffsets]: (r, version, topic) => {
    const w = new KafkaWriter(64);
    w.int32(-1);
    if (version >= 2) w.int8(0);
    w.int32(1).string(topic).int32(1).int32(r.int(2));
    if (version >= 4) w.int32(-1);
    w.int64(r.pick([-1n, -2n, 0n]));
    return Buffer.from(w.finish());
  },
  [API.FindCoordinator]: (r, version) => {
    const w = new KafkaWriter(64);
    w.string(`fz-${r.int(100)}`);
    if (version >= 1) w.int8(r.int(2));
    return Buffer.from(w.finish());
  },
  [API.ApiVersions]: (_r, version) => {
    const w = new KafkaWriter(64);
    if (version >= 3)
      w.compactNullableString("tern-fuzz").compactNullableString("1").noTaggedFields();
    return Buffer.from(w.finish());
  },
};

// The field encodings that differ between an API's classic and flexible versions, chosen once
// per request: strings and bytes with an int16/int32 length or a compact (uvarint + 1) one,
// arrays with an int32 count or a compact one, and a tagged-field section that exists only in
// flexible versions (read and skipped; written empty). An API whose layout otherwise stays
// the same across the flexible boundary reads and writes through these instead of branching
// on every field.
import { KafkaWriter, type KafkaReader } from "../../libs/records/kafka-codec.js";

export interface FieldReader {
  readonly flexible: boolean;
  string(): string;
  nullableString(): string | null;
  /** Bytes copied out of the frame (the frame's buffer is not kept); null read as empty. */
  bytes(): Buffer;
  array<T>(item: (r: KafkaReader) => T): T[];
  /** Skips a tagged-field section in flexible versions; nothing before. */
  tags(): void;
}

export function fieldReader(r: KafkaReader, flexible: boolean): FieldReader {
  return {
    flexible,
    string: () => (flexible ? r.compactString() : r.string()),
    nullableString: () => (flexible ? r.compactNullableString() : r.nullableString()),
    bytes: () =>
      Buffer.from((flexible ? r.compactNullableBytes() : r.nullableBytes()) ?? Buffer.alloc(0)),
    array: (item) => (flexible ? r.compactArray(item) : r.array(item)),
    tags: () => {
      if (flexible) r.taggedFields();
    },
  };
}

export interface FieldWriter {
  readonly flexible: boolean;
  string(s: string | null): void;
  bytes(b: Uint8Array | null): void;
  array<T>(items: readonly T[], item: (w: KafkaWriter, t: T) => void): void;
  /** An empty tagged-field section in flexible versions; nothing before. */
  tags(): void;
}

export function fieldWriter(w: KafkaWriter, flexible: boolean): FieldWriter {
  return {
    flexible,
    string: (s) => {
      if (flexible) w.compactNullableString(s);
      else w.nullableString(s);
    },
    bytes: (b) => {
      if (!flexible) w.nullableBytes(b);
      else if (b === null) w.uvarint(0);
      else w.uvarint(b.byteLength + 1).raw(b);
    },
    array: (items, item) => {
      if (flexible) w.compactArray(items, item);
      else w.array(items, item);
    },
    tags: () => {
      if (flexible) w.noTaggedFields();
    },
  };
}

/** A field of a tagged-field section: its tag and how its value is written. */
export type TaggedField = readonly [tag: number, write: (w: KafkaWriter) => void];

/**
 * A tagged-field section with these fields (ascending tags, as Kafka requires), each written
 * as its tag, its size and its bytes; an empty section when none is given.
 */
export function writeTaggedFields(w: KafkaWriter, fields: readonly TaggedField[]): void {
  w.uvarint(fields.length);
  for (const [tag, write] of fields) {
    const x = new KafkaWriter(64);
    write(x);
    const bytes = x.finish();
    w.uvarint(tag).uvarint(bytes.byteLength).raw(bytes);
  }
}

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): the checksum of Kafka's record batch
// v2, checked on every produced and fetched batch. Node's zlib has only CRC-32, so long inputs go
// to the CPU's CRC instruction through @node-rs/crc32 (about 4x the tables below on 64 KiB);
// short ones stay here, where a native call costs more than it saves, and so does everything
// where that package's prebuilt binary does not load. Slice-by-16 (sixteen 256-entry tables in one array, sixteen
// bytes per step) reading aligned 32-bit little-endian words: about 1.5x slice-by-8 over bytes,
// which matters since every produced and fetched batch is checked (a big-endian host takes the
// bytewise slice-by-8 path).
const POLY = 0x82f63b78;
/** Table s (0..15) at s * 256: the CRC of a byte followed by s zero bytes. */
const T = ((): Int32Array => {
  const t = new Int32Array(256 * 16);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? POLY ^ (c >>> 1) : c >>> 1;
    t[n] = c;
  }
  for (let s = 1; s < 16; s++)
    for (let n = 0; n < 256; n++) {
      const prev = t[(s - 1) * 256 + n]!;
      t[s * 256 + n] = (prev >>> 8) ^ t[prev & 0xff]!;
    }
  return t;
})();

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
/** Below this many bytes the word view costs more than it saves. */
const WORDS_FROM_BYTES = 64;

type Crc32c = (bytes: Uint8Array, crc?: number) => number;

/** From this many bytes on, the native call's fixed cost (about 0.2 µs) pays off. */
const NATIVE_FROM_BYTES = 256;
const nativeCrc32c = await loadNative();

async function loadNative(): Promise<Crc32c | undefined> {
  try {
    const loaded = (await import("@node-rs/crc32")) as { crc32c?: unknown };
    return typeof loaded.crc32c === "function" ? (loaded.crc32c as Crc32c) : undefined;
  } catch {
    return undefined; // no prebuilt binary for this platform: the tables serve every size
  }
}

/** Whether long inputs use the CPU's CRC instruction (false: the tables below only). */
export const crc32cNative = nativeCrc32c !== undefined;

/** CRC-32C of bytes, continuing from `crc` (0 to start). */
export function crc32c(bytes: Uint8Array, crc = 0): number {
  if (nativeCrc32c !== undefined && bytes.byteLength >= NATIVE_FROM_BYTES)
    return nativeCrc32c(bytes, crc);
  return crc32cTables(bytes, crc);
}

/** The table-driven CRC-32C: the fallback, and the oracle the native one is tested against. */
export function crc32cTables(bytes: Uint8Array, crc = 0): number {
  let c = ~crc | 0;
  let i = 0;
  const n = bytes.byteLength;
  if (LITTLE_ENDIAN && n >= WORDS_FROM_BYTES) {
    // Bytewise up to a 4-byte boundary, then four words (16 bytes) per step.
    const head = (4 - (bytes.byteOffset & 3)) & 3;
    for (; i < head; i++) c = T[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
    const words = new Int32Array(bytes.buffer, bytes.byteOffset + i, (n - i) >>> 2);
    const steps = words.length & ~3;
    for (let j = 0; j < steps; j += 4) {
      const a = c ^ words[j]!;
      const b = words[j + 1]!;
      const d = words[j + 2]!;
      const e = words[j + 3]!;
      c =
        T[3840 + (a & 0xff)]! ^
        T[3584 + ((a >>> 8) & 0xff)]! ^
        T[3328 + ((a >>> 16) & 0xff)]! ^
        T[3072 + (a >>> 24)]! ^
        T[2816 + (b & 0xff)]! ^
        T[2560 + ((b >>> 8) & 0xff)]! ^
        T[2304 + ((b >>> 16) & 0xff)]! ^
        T[2048 + (b >>> 24)]! ^
        T[1792 + (d & 0xff)]! ^
        T[1536 + ((d >>> 8) & 0xff)]! ^
        T[1280 + ((d >>> 16) & 0xff)]! ^
        T[1024 + (d >>> 24)]! ^
        T[768 + (e & 0xff)]! ^
        T[512 + ((e >>> 8) & 0xff)]! ^
        T[256 + ((e >>> 16) & 0xff)]! ^
        T[e >>> 24]!;
    }
    i += steps * 4;
  }
  for (; i + 8 <= n; i += 8) {
    const a =
      c ^ (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24));
    c =
      T[1792 + (a & 0xff)]! ^
      T[1536 + ((a >>> 8) & 0xff)]! ^
      T[1280 + ((a >>> 16) & 0xff)]! ^
      T[1024 + (a >>> 24)]! ^
      T[768 + bytes[i + 4]!]! ^
      T[512 + bytes[i + 5]!]! ^
      T[256 + bytes[i + 6]!]! ^
      T[bytes[i + 7]!]!;
  }
  for (; i < n; i++) c = T[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78): the checksum of Kafka's record batch
// v2. Node's zlib has only CRC-32. Slice-by-4 tables: about four times a byte-wise table.
const POLY = 0x82f63b78;
const TABLES: Uint32Array[] = (() => {
  const t0 = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? POLY ^ (c >>> 1) : c >>> 1;
    t0[n] = c >>> 0;
  }
  const out = [t0];
  for (let s = 1; s < 4; s++) {
    const prev = out[s - 1]!;
    const t = new Uint32Array(256);
    for (let n = 0; n < 256; n++) t[n] = (prev[n]! >>> 8) ^ t0[prev[n]! & 0xff]!;
    out.push(t);
  }
  return out;
})();

/** CRC-32C of bytes, continuing from `crc` (0 to start). */
export function crc32c(bytes: Uint8Array, crc = 0): number {
  const [t0, t1, t2, t3] = TABLES as [Uint32Array, Uint32Array, Uint32Array, Uint32Array];
  let c = ~crc >>> 0;
  let i = 0;
  const n = bytes.byteLength;
  for (; i + 4 <= n; i += 4) {
    c ^= bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24);
    c = t3[c & 0xff]! ^ t2[(c >>> 8) & 0xff]! ^ t1[(c >>> 16) & 0xff]! ^ t0[c >>> 24]!;
  }
  for (; i < n; i++) c = t0[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

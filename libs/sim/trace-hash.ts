// An order-sensitive 64-bit fingerprint (two 32-bit FNV-1a-style lanes) of everything a run
// did, so a replay of a seed can be compared with the original by one string.
export class TraceHash {
  private a = 0x811c9dc5;
  private b = 0x01000193;

  mix(n: number): void {
    const lo = n >>> 0;
    const hi = Math.floor(n / 4294967296) >>> 0;
    this.a = Math.imul(this.a ^ lo, 0x01000193);
    this.a = Math.imul(this.a ^ hi, 0x01000193);
    this.b = Math.imul(this.b ^ lo, 0x5bd1e995) ^ (this.b >>> 13);
    this.b = Math.imul(this.b ^ hi, 0x5bd1e995) ^ (this.b >>> 13);
  }

  hex(): string {
    return (
      (this.a >>> 0).toString(16).padStart(8, "0") + (this.b >>> 0).toString(16).padStart(8, "0")
    );
  }
}

/** FNV-1a of bytes, for fingerprinting entry payloads. */
export function bytesHash(bytes: Uint8Array): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < bytes.byteLength; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193);
  return h >>> 0;
}

// A small seeded PRNG (splitmix64 seeding a xoshiro128**) so that every random choice in the
// core and the simulator replays exactly from one seed. Never Math.random in replicated code.
export interface Random {
  /** Uniform float in [0, 1). */
  next(): number;
  /** Uniform integer in [lo, hi). */
  int(lo: number, hi: number): number;
  bool(probability: number): boolean;
  pick<T>(items: readonly T[]): T;
  fork(): Random;
}

export class SeededRandom implements Random {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  constructor(seed: number | bigint) {
    let x = BigInt.asUintN(64, BigInt(seed));
    const next64 = (): bigint => {
      x = BigInt.asUintN(64, x + 0x9e3779b97f4a7c15n);
      let z = x;
      z = BigInt.asUintN(64, (z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n);
      z = BigInt.asUintN(64, (z ^ (z >> 27n)) * 0x94d049bb133111ebn);
      return z ^ (z >> 31n);
    };
    const a = next64();
    const b = next64();
    this.s0 = Number(a & 0xffffffffn) | 0;
    this.s1 = Number(a >> 32n) | 0;
    this.s2 = Number(b & 0xffffffffn) | 0;
    this.s3 = Number(b >> 32n) | 0;
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1;
  }

  private nextUint32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5), 7), 9);
    const t = this.s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= this.s1;
    this.s1 ^= this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = rotl(this.s3, 11);
    return result >>> 0;
  }

  next(): number {
    return this.nextUint32() / 4294967296;
  }

  int(lo: number, hi: number): number {
    if (!(hi > lo)) throw new RangeError(`int(${lo}, ${hi}): empty range`);
    return lo + Math.floor(this.next() * (hi - lo));
  }

  bool(probability: number): boolean {
    return this.next() < probability;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError("pick from an empty list");
    return items[this.int(0, items.length)]!;
  }

  fork(): Random {
    return new SeededRandom(this.nextUint32() * 4294967296 + this.nextUint32());
  }
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}

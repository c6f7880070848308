// A random source seeded from the operating system's entropy (crypto): what a real process
// draws from, so two processes (or two SDK clients) never draw the same sequence.
import { randomBytes } from "node:crypto";
import { SeededRandom } from "../common/prng.js";
import type { RandomSource } from "./random-source.js";

export function systemRandom(): RandomSource {
  return new SeededRandom(randomBytes(8).readBigUInt64BE());
}

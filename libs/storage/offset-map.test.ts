// The cleaner's key→offset map: latest offset per key, a fixed budget, refusal when full.
import { describe, expect, it } from "vitest";
import { OffsetMap, OFFSET_MAP_SLOT_BYTES } from "./offset-map.js";

const key = (s: string): Buffer => Buffer.from(s);

describe("OffsetMap", () => {
  it("keeps the latest offset of each key", () => {
    const m = new OffsetMap(1000 * OFFSET_MAP_SLOT_BYTES);
    for (let o = 0; o < 500; o++) expect(m.put(key(`k${o % 37}`), BigInt(o))).toBe(true);
    expect(m.size).toBe(37);
    for (let k = 0; k < 37; k++) {
      const last = 499 - ((499 - k) % 37);
      expect(m.get(key(`k${k}`))).toBe(BigInt(last));
    }
    expect(m.get(key("absent"))).toBeUndefined();
    expect(m.get(key(""))).toBeUndefined();
    expect(m.put(key(""), 0n)).toBe(true); // an empty key is a key
    expect(m.get(key(""))).toBe(0n);
    expect(m.latestOffset()).toBe(499n);
  });

  it("refuses a new key past 90 % of its slots, and takes updates of known ones", () => {
    const m = new OffsetMap(100 * OFFSET_MAP_SLOT_BYTES);
    for (let i = 0; i < 90; i++) expect(m.put(key(`k${i}`), BigInt(i))).toBe(true);
    expect(m.utilisation()).toBe(1);
    expect(m.put(key("one more"), 100n)).toBe(false);
    expect(m.get(key("one more"))).toBeUndefined();
    expect(m.put(key("k3"), 200n)).toBe(true);
    expect(m.get(key("k3"))).toBe(200n);
    m.clear();
    expect(m.size).toBe(0);
    expect(m.get(key("k3"))).toBeUndefined();
  });
});

// Keeps docs/kafka-protocol.md's served API versions true to the code (scripts/docs/
// kafka-versions.ts): the generated block equals what api-versions.ts renders, and the version
// column of the doc's hand-written API tables agrees with it. A failure says how to fix it.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { SUPPORTED } from "../../services/kafka/api-versions.js";
import { DOC, renderServedVersions, repositoryRoot, withServedVersions } from "./kafka-versions.js";

const text = readFileSync(join(repositoryRoot(), DOC), "utf8");
const FIX = "run: npm run build && node dist/scripts/docs/kafka-versions.js --write";

describe("served Kafka API versions in the docs", () => {
  it("renders one row per served API, flexible ranges from each API's first flexible version", () => {
    const table = renderServedVersions();
    expect(table.split("\n")).toHaveLength(SUPPORTED.size + 2);
    expect(table).toMatch(/\| Metadata \(3\) +\| 1-13 +\| 9-13 +\|/);
    expect(table).toMatch(/\| Produce \(0\) +\| 0-12 +\| 9-12 +\|/);
  });

  it(`${DOC}'s generated block is what the code renders (${FIX})`, () => {
    expect(text, FIX).toBe(withServedVersions(text));
  });

  it(`${DOC}'s API tables give each API the versions the code serves`, () => {
    const wrong: string[] = [];
    for (const row of text.split("\n")) {
      const cells = row.split("|").map((c) => c.trim());
      const keys = [...(cells[1] ?? "").matchAll(/\((\d+)\)/g)].map((m) => Number(m[1]));
      const versions = cells[2] ?? "";
      if (keys.length === 0 || !/^\d+(-\d+)?$/.test(versions)) continue;
      const [min, max = min] = versions.split("-").map(Number);
      for (const key of keys) {
        const served = SUPPORTED.get(key);
        if (served?.min !== min || served.max !== max)
          wrong.push(`${cells[1]}: doc ${versions}, code ${served?.min}-${served?.max}`);
      }
    }
    expect(wrong, FIX).toEqual([]);
  });
});

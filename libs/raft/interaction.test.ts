// Runs every interaction scenario in libs/raft/testdata (etcd-raft's datadriven style, see
// libs/raft/interaction/env.ts for the command language) against the real core. REWRITE=1
// regenerates the expected output in place instead of comparing; review the diff before committing.
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseFile, renderFile } from "./interaction/datadriven.js";
import { InteractionEnv } from "./interaction/env.js";

const DIR = join(import.meta.dirname, "testdata");
const REWRITE = process.env.REWRITE === "1";

describe("raft interaction scenarios", () => {
  for (const file of readdirSync(DIR)
    .filter((f) => f.endsWith(".txt"))
    .sort()) {
    it(file, () => {
      const path = join(DIR, file);
      const parsed = parseFile(readFileSync(path, "utf8"));
      const env = new InteractionEnv();
      const actual = parsed.cases.map((c) => env.handle(c));
      if (REWRITE) {
        writeFileSync(path, renderFile(parsed, actual));
        return;
      }
      parsed.cases.forEach((c, k) => {
        expect(actual[k], `${file}:${c.line}: ${c.cmdLine}`).toBe(c.expected);
      });
    });
  }
});

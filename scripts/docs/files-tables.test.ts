// Keeps the Files tables of docs/*.md true to the tree (scripts/docs/files-tables.ts): every
// named file exists, and a doc that covers a folder names every source file in it. A failure
// lists each doc and what to add or remove.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { checkFilesTable, docsFilesTables, parseFilesTables } from "./files-tables.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

describe("docs Files tables", () => {
  it("parses the folder from the heading and the names of the first column", () => {
    const text = [
      "# x",
      "## Files (libs/x/)",
      "",
      "| file | concept |",
      "| --- | --- |",
      "| `a.ts`, `b.ts` | `c.ts` is not a name here |",
      "| `sub/` | a folder |",
      "",
      "text",
    ].join("\n");
    expect(parseFilesTables("docs/x.md", text)).toEqual([
      { doc: "docs/x.md", folder: "libs/x", names: ["a.ts", "b.ts", "sub/"] },
    ]);
  });

  it("reports missing names and unnamed files, and leaves tests, fakes and named folders out", () => {
    const dir = mkdtempSync(join(tmpdir(), "files-tables-"));
    try {
      for (const f of ["x/a.ts", "x/b.ts", "x/a.test.ts", "x/testing/fake.ts", "x/sub/c.ts"]) {
        mkdirSync(dirname(join(dir, f)), { recursive: true });
        writeFileSync(join(dir, f), "");
      }
      const problems = checkFilesTable(dir, {
        doc: "d.md",
        folder: "x",
        names: ["a.ts", "gone.ts", "sub/"],
      });
      expect(problems.map((p) => p.problem)).toEqual([
        "names gone.ts, which does not exist in x",
        "does not name x/b.ts",
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("every docs/*.md Files table names existing files, and all of its folder's", () => {
    const tables = docsFilesTables(root);
    expect(tables.length).toBeGreaterThan(0);
    expect(
      tables.flatMap((t) => checkFilesTable(root, t)).map((p) => `${p.doc}: ${p.problem}`),
    ).toEqual([]);
  });
});

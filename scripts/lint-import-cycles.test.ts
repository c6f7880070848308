// The import-cycle lint (scripts/lint-import-cycles.mjs), run as `npm run lint` runs it, on
// planted source trees: a cycle through three files (one of the imports type-only) fails with
// the files named, the same tree without the closing import passes, and a forbidden folder
// direction (cli/ importing scripts/) fails.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";

const script = join(dirname(fileURLToPath(import.meta.url)), "lint-import-cycles.mjs");
const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), "tern-import-cycles-"));
  roots.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

async function lint(root: string): Promise<{ code: number; stderr: string }> {
  try {
    const { stderr } = await promisify(execFile)(process.execPath, [script, root]);
    return { code: 0, stderr };
  } catch (e) {
    const failed = e as { code: number; stderr: string };
    return { code: failed.code, stderr: failed.stderr };
  }
}

const chain = {
  "libs/a/one.ts": 'import { two } from "./two.js";\nexport const one = two + 1;\n',
  "libs/a/two.ts": 'import { three } from "../b/three.js";\nexport const two = three + 1;\n',
  "libs/b/three.ts": "export const three = 3;\n",
};

describe("lint-import-cycles", () => {
  it("passes a tree without cycles", async () => {
    const result = await lint(tree(chain));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toMatch(/import cycles: ok \(3 files/);
  });

  it("fails on a planted cycle and names its files", async () => {
    const root = tree({
      ...chain,
      "libs/b/three.ts": 'import type { One } from "../a/one.js";\nexport const three = 3;\n',
      "libs/a/one.ts":
        'import { two } from "./two.js";\nexport type One = number;\nexport const one = two + 1;\n',
    });
    const result = await lint(root);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      "import cycle between 3 files: libs/a/one.ts, libs/a/two.ts, libs/b/three.ts",
    );
  });

  it("fails on a file that imports itself, and on cli/ importing scripts/", async () => {
    const result = await lint(
      tree({
        "libs/self.ts": 'export * from "./self.js";\n',
        "cli/tool.ts": 'import { x } from "../scripts/x.js";\nexport const y = x;\n',
        "scripts/x.ts": "export const x = 1;\n",
      }),
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("import cycle: libs/self.ts imports itself");
    expect(result.stderr).toContain(
      "cli/tool.ts imports scripts/x.ts: cli/ must not import scripts/",
    );
  });
});

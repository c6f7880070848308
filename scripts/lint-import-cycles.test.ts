// The import-cycle lint (scripts/lint-import-cycles.mjs), run as `npm run lint` runs it, on
// planted source trees: a cycle through three files (one of the imports type-only) fails with
// the files named, the same tree without the closing import passes, a forbidden folder
// direction (cli/ importing scripts/) fails, and so do services/group importing its host
// (services/broker, services/kafka) and its host importing past services/group/index.ts.
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

  const groupComponent = {
    "services/group/index.ts": 'export { coordinator } from "./coordinator.js";\n',
    "services/group/coordinator.ts":
      'import { ttl } from "../../libs/common/ttl.js";\nexport const coordinator = ttl;\n',
    "libs/common/ttl.ts": "export const ttl = 1;\n",
    "services/broker/compose.ts":
      'import { coordinator } from "../group/index.js";\nexport const c = coordinator;\n',
    "services/kafka/join.ts":
      'import type { coordinator } from "../group/index.js";\nexport type J = typeof coordinator;\n',
    // A unit test may reach into the component's internals.
    "services/kafka/join.test.ts":
      'import { coordinator } from "../group/coordinator.js";\nexport const t = coordinator;\n',
  };

  it("passes services/group imported through its entry file", async () => {
    const result = await lint(tree(groupComponent));
    expect(result.code, result.stderr).toBe(0);
  });

  it("fails on services/group importing the broker or the Kafka listener", async () => {
    const result = await lint(
      tree({
        ...groupComponent,
        "services/broker/limits.ts": "export const limit = 1;\n",
        "services/kafka/codec.ts": "export type Codec = string;\n",
        "services/group/coordinator.ts":
          'import { limit } from "../broker/limits.js";\n' +
          'import type { Codec } from "../kafka/codec.js";\n' +
          "export const coordinator: Codec | number = limit;\n",
      }),
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      "services/group/coordinator.ts imports services/broker/limits.ts: services/group/ must not import services/broker/",
    );
    expect(result.stderr).toContain(
      "services/group/coordinator.ts imports services/kafka/codec.ts: services/group/ must not import services/kafka/",
    );
  });

  it("fails on the broker or the Kafka listener importing services/group internals", async () => {
    const result = await lint(
      tree({
        ...groupComponent,
        "services/broker/compose.ts":
          'import { coordinator } from "../group/coordinator.js";\nexport const c = coordinator;\n',
        "services/kafka/join.ts":
          'import type { coordinator } from "../group/coordinator.js";\nexport type J = typeof coordinator;\n',
      }),
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      "services/broker/compose.ts imports services/group/coordinator.ts: import services/group/ through services/group/index.ts only",
    );
    expect(result.stderr).toContain(
      "services/kafka/join.ts imports services/group/coordinator.ts: import services/group/ through services/group/index.ts only",
    );
    expect(result.stderr).not.toContain("join.test.ts");
  });
});

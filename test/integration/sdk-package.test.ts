// The installable SDK (docs/sdk.md), as an application meets it: `npm pack` in packages/client
// (its prepack builds dist/ and proto/), `npm install` of the tarball into a fresh app folder
// outside the repository, a TypeScript check of an app against the package's declarations
// (skipLibCheck: the declarations are tsc's own output; what is checked is that the exports map
// resolves them and an app compiles against them), and a plain ESM script in that folder
// (helpers/sdk-app.mjs) that produces to a one-node-per-role local cluster and reads the
// records back. npm's registry must be reachable, or its cache warm (the install prefers it).
import { execFile } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";

const execFileAsync = promisify(execFile);
const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const packageDir = join(repoRoot, "packages", "client");
const SHAPE = { controllers: 1, brokers: 1, coordinators: 1 } as const;
const PACK_TIMEOUT_MS = 180_000;
const INSTALL_TIMEOUT_MS = 180_000;
const APP_TIMEOUT_MS = 90_000;
const RECORDS = 5;

let cluster: ProcessCluster | undefined;
let dataDir: string;
let workDir: string;
let appDir: string;

async function run(
  command: string,
  args: readonly string[],
  cwd: string,
  timeoutMs: number,
): Promise<string> {
  const { stdout } = await execFileAsync(command, args, {
    cwd,
    timeout: timeoutMs,
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout;
}

/** npm pack (prepack builds the package), then a fresh app folder with the tarball installed. */
async function packAndInstall(): Promise<string> {
  await run("npm", ["pack", "--pack-destination", workDir], packageDir, PACK_TIMEOUT_MS);
  const tarballs = readdirSync(workDir).filter((f) => f.endsWith(".tgz"));
  expect(tarballs).toEqual([expect.stringMatching(/^tern-client-.*\.tgz$/)]);
  const app = join(workDir, "app");
  rmSync(app, { recursive: true, force: true });
  mkdirSync(app);
  writeFileSync(
    join(app, "package.json"),
    JSON.stringify({ name: "sdk-app", private: true, type: "module" }),
  );
  await run(
    "npm",
    ["install", "--prefer-offline", "--no-audit", "--no-fund", join(workDir, tarballs[0]!)],
    app,
    INSTALL_TIMEOUT_MS,
  );
  return app;
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-sdk-cluster-"));
  workDir = mkdtempSync(join(tmpdir(), "tern-sdk-app-"));
  const basePort = await freeBasePort(SHAPE);
  // The cluster starts while the package builds and installs.
  const [started, app] = await Promise.all([
    startCluster({
      dataDir,
      ...SHAPE,
      basePort,
      env: { TERN_LOG_LEVEL: "warn" },
      healthTimeoutMs: 120_000,
    }),
    packAndInstall(),
  ]);
  cluster = started;
  appDir = app;
}, PACK_TIMEOUT_MS + INSTALL_TIMEOUT_MS);

afterAll(async () => {
  await cluster?.stop({ termTimeoutMs: 5_000 });
  rmSync(dataDir, { recursive: true, force: true });
  rmSync(workDir, { recursive: true, force: true });
}, 60_000);

describe("@tern/client installed from its packed tarball", () => {
  it(
    "type-checks an application against the package's declarations",
    async () => {
      writeFileSync(
        join(appDir, "types-check.ts"),
        [
          `import { Admin, Consumer, Producer, TimeoutError, type ConsumerRecord, type ProducerRecord, type RecordMetadata } from "@tern/client";`,
          `const record: ProducerRecord = { topic: "t", key: "k", value: "v" };`,
          `export async function roundTrip(bootstrap: string): Promise<[RecordMetadata, ConsumerRecord[]]> {`,
          `  const meta = await new Producer({ bootstrap }).send(record);`,
          `  const consumer = new Consumer({ bootstrap, isolationLevel: "read_committed" });`,
          `  consumer.assign([{ topic: "t", partition: 0 }]);`,
          `  await new Admin({ bootstrap }).close();`,
          `  return [meta, await consumer.poll({ timeoutMs: 1 })];`,
          `}`,
          `export const isTimeout = (e: unknown): boolean => e instanceof TimeoutError;`,
          ``,
        ].join("\n"),
      );
      const tsc = join(repoRoot, "node_modules", "typescript", "bin", "tsc");
      const args = [
        tsc,
        "--noEmit",
        "--strict",
        "--skipLibCheck",
        "--target",
        "ES2022",
        "--module",
        "nodenext",
        "--moduleResolution",
        "nodenext",
        "--typeRoots",
        join(repoRoot, "node_modules", "@types"),
        "--types",
        "node",
        "types-check.ts",
      ];
      await expect(run(process.execPath, args, appDir, APP_TIMEOUT_MS)).resolves.toBe("");
    },
    APP_TIMEOUT_MS,
  );

  it(
    "produces to the local cluster and reads the records back",
    async () => {
      copyFileSync(
        join(repoRoot, "test", "integration", "helpers", "sdk-app.mjs"),
        join(appDir, "sdk-app.mjs"),
      );
      const bootstrap = cluster!.addresses("controller").join(",");
      const stdout = await run(
        process.execPath,
        ["sdk-app.mjs", bootstrap, "sdk-topic", String(RECORDS)],
        appDir,
        APP_TIMEOUT_MS,
      );
      const result = JSON.parse(stdout.trim().split("\n").at(-1)!) as {
        sent: { partition: number; offset: string }[];
        read: { offset: string; key: string; value: string }[];
      };
      expect(result.sent).toEqual(
        Array.from({ length: RECORDS }, (_, i) => ({ partition: 0, offset: String(i) })),
      );
      expect(result.read).toEqual(
        Array.from({ length: RECORDS }, (_, i) => ({
          offset: String(i),
          key: `k${i}`,
          value: `v${i}`,
        })),
      );
    },
    APP_TIMEOUT_MS,
  );
});

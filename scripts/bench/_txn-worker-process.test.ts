// Drives the built client process (dist/scripts/bench/_txn-worker.js; run `npm run build` first).
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { WorkerProcess } from "./_txn-worker-process.js";

const SCRIPT = resolve("dist/scripts/bench/_txn-worker.js");

describe("WorkerProcess with the real client process", () => {
  it("answers a bad job with its error and keeps serving; a job over its bound kills the process", async () => {
    expect(existsSync(SCRIPT), `${SCRIPT} missing: build first`).toBe(true);
    const worker = new WorkerProcess(SCRIPT);
    try {
      await expect(worker.run({ kind: "bogus" } as never, 30_000)).rejects.toThrow(
        /unknown job kind bogus/,
      );
      await expect(worker.run({ kind: "bogus" } as never, 30_000)).rejects.toThrow(
        /unknown job kind bogus/,
      );
      // Nothing listens on port 1: the fetch cannot finish within 1.5 s.
      const fetch = {
        kind: "fetch" as const,
        bootstrap: "127.0.0.1:1",
        topic: "t",
        partitions: 1,
        isolation: "read_committed" as const,
        partitionMaxBytes: 1024,
        timeoutS: 60,
      };
      await expect(worker.run(fetch, 1_500)).rejects.toThrow(
        /not done within 1500 ms; client process killed/,
      );
      await expect
        .poll(async () => worker.run(fetch, 1_000).catch((e: Error) => e.message), {
          timeout: 10_000,
        })
        .toMatch(/exited/);
    } finally {
      await worker.close();
    }
  });

  it("answers a job written to a process whose stdin is closed with an error, never an uncaught EPIPE", async () => {
    // The process closes its stdin, says so through a file, and lingers: a write to it then fails
    // with EPIPE before it exits, which is the window a just-killed worker leaves open.
    const dir = mkdtempSync(join(tmpdir(), "tern-worker-"));
    const script = join(dir, "closed-stdin.cjs");
    const closed = join(dir, "stdin-closed");
    writeFileSync(
      script,
      `require("node:fs").closeSync(0);\nrequire("node:fs").writeFileSync(${JSON.stringify(closed)}, "");\nsetTimeout(() => {}, 10000);\n`,
    );
    const worker = new WorkerProcess(script);
    try {
      await expect.poll(() => existsSync(closed), { timeout: 10_000 }).toBe(true);
      await expect(worker.run({ kind: "bogus" } as never, 5_000)).rejects.toThrow(
        /exited during a bogus job \(write EPIPE\)/,
      );
      await expect(worker.run({ kind: "bogus" } as never, 5_000)).rejects.toThrow(
        /has exited \(write EPIPE\)/,
      );
    } finally {
      await worker.close();
    }
  });
});

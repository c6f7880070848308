// Drives the built client process (dist/scripts/bench/_txn-worker.js; run `npm run build` first).
import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { WorkerProcess } from "./_txn-worker-process.js";

const SCRIPT = resolve("dist/scripts/bench/_txn-worker.js");

describe("WorkerProcess with the real client process", () => {
  it("answers a bad job with its error and keeps serving; a job over its bound kills the process", async () => {
    expect(existsSync(SCRIPT), `${SCRIPT} missing: build first`).toBe(true);
    const worker = new WorkerProcess(SCRIPT);
    try {
      await expect(worker.run({ kind: "bogus" } as never, 30_000)).rejects.toThrow(/unknown job kind bogus/);
      await expect(worker.run({ kind: "bogus" } as never, 30_000)).rejects.toThrow(/unknown job kind bogus/);
      // Nothing listens on port 1: the fetch cannot finish within 1.5 s.
      const fetch = { kind: "fetch" as const, bootstrap: "127.0.0.1:1", topic: "t", partitions: 1, isolation: "read_committed" as const, partitionMaxBytes: 1024, timeoutS: 60 };
      await expect(worker.run(fetch, 1_500)).rejects.toThrow(/not done within 1500 ms; client process killed/);
      await expect.poll(async () => worker.run(fetch, 1_000).catch((e: Error) => e.message), { timeout: 10_000 }).toMatch(/exited/);
    } finally {
      await worker.close();
    }
  });
});

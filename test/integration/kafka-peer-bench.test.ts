// `npm run bench -- kafka-peer` end to end, once, at its smallest: Apache Kafka fetched from
// Maven Central (scripts/setup/kafka-tools.sh) and started as a 3-node KRaft cluster beside a
// local tern cluster, the Java programs built (scripts/setup/java-clients.sh), and the
// 1-in-flight workload run against both. It asserts the bench's contract (a line per figure,
// from both systems and each client, with version, load and CPU), not its figures: those are a
// benchmark's business, on a quiet machine (docs/benchmarks.md). Skipped without java and mvn.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { distRoot } from "../../scripts/cluster/process-control.js";
import { hasJava } from "./helpers/java-client.js";

const JAVA = hasJava();
if (!JAVA)
  process.stderr.write(
    "kafka-peer-bench.test.ts SKIPPED: needs java and mvn; install with: apt-get install -y openjdk-17-jdk-headless maven\n",
  );

const BENCH = join(distRoot(), "scripts", "bench", "main.js");
const RUN_TIMEOUT_MS = 300_000;

interface Line {
  bench: string;
  case: string;
  metric: string;
  value: number;
  system: string;
  version: string;
  client: string;
  variant: string;
  load_1m: number;
  server_cpu_ms: number;
}

function runBench(
  args: readonly string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BENCH, "kafka-peer", ...args], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), RUN_TIMEOUT_MS);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe.skipIf(!JAVA)("npm run bench -- kafka-peer", () => {
  it(
    "runs the 1-in-flight workload against Apache Kafka and tern with the same Java client",
    async () => {
      const r = await runBench(["--workload", "latency", "--duration-s", "2", "--warm-up-s", "0"]);
      expect(r.code, r.stderr.slice(-3000)).toBe(0);
      const lines = r.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l) as Line);
      const p99 = lines.filter((l) => l.metric === "produce_latency_p99");
      const columns = p99.map((l) => `${l.system}/${l.client}/${l.variant}`).sort();
      expect(columns).toEqual([
        "kafka/java/flush-default",
        "kafka/java/flush-every-message",
        "tern/grpc/fsync-every-commit",
        "tern/java/fsync-every-commit",
      ]);
      for (const l of lines) {
        expect(l.bench).toBe("kafka-peer");
        expect(l.case).toBe("latency-1-inflight-1kib");
        expect(l.version).toMatch(/^\d+\.\d+\.\d+/);
        expect(l.load_1m).toBeGreaterThanOrEqual(0);
        expect(l.server_cpu_ms).toBeGreaterThan(0);
      }
      // Every record of each run was acknowledged: a rate above zero, a latency with a value.
      for (const l of lines.filter((x) => x.metric === "records_per_s"))
        expect(l.value).toBeGreaterThan(0);
      for (const l of p99) expect(l.value).toBeGreaterThan(0);
      expect(lines.some((l) => l.metric === "failed_sends")).toBe(false);
    },
    RUN_TIMEOUT_MS + 30_000,
  );
});

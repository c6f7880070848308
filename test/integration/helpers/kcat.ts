// kcat (librdkafka's command-line client) as a child process for the Kafka-protocol tests:
// its exit code and output, stdin fed when given, killed after a bound.
import { spawn } from "node:child_process";

export interface KcatResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export function runKcat(
  bootstrap: string,
  args: readonly string[],
  options: { input?: string; timeoutMs?: number } = {},
): Promise<KcatResult> {
  return new Promise((resolve, reject) => {
    const child = spawn("kcat", ["-b", bootstrap, ...args], { stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`kcat ${args.join(" ")} timed out; stderr: ${stderr}`));
    }, options.timeoutMs ?? 60_000);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.on("error", () => undefined); // kcat -C may exit before reading its (empty) stdin
    child.stdin.end(options.input ?? "");
  });
}

/** The small cluster the SASL and ACL tests start (one controller and coordinator, three brokers, few internal partitions). */
export const SASL_TEST_SHAPE = { controllers: 1, brokers: 3, coordinators: 1 };
export const SASL_TEST_ENV = {
  TERN_LOG_LEVEL: "warn",
  TERN_TXN_STATE_PARTITIONS: "2",
  TERN_TXN_STATE_REPLICATION_FACTOR: "1",
  TERN_OFFSETS_PARTITIONS: "2",
};
/** Bounds librdkafka's own retries so a refused client exits instead of waiting. */
export const KCAT_BOUNDED = [
  "-X",
  "message.timeout.ms=8000",
  "-X",
  "socket.timeout.ms=5000",
  "-m",
  "8",
];
/** For a client that must be refused: kcat waits out its bounds, so they are short (an accepted one is done well within them). */
export const KCAT_REFUSED = [
  "-X",
  "message.timeout.ms=3000",
  "-X",
  "socket.timeout.ms=3000",
  "-m",
  "3",
];

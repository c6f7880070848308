// kcat (librdkafka's command-line client) as a child process for the Kafka-protocol tests:
// its exit code and output, stdin fed when given, killed after a bound.
import { spawn } from "node:child_process";

export interface KcatResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

export function runKcat(bootstrap: string, args: readonly string[], options: { input?: string; timeoutMs?: number } = {}): Promise<KcatResult> {
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

// Bench clients as child processes (librdkafka from Python, Kafka's Java client, a libs/client
// process): each prints its result as one JSON line last on stdout; its stderr passes through.
import { spawn, spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

/**
 * Runs COMMAND ARGS and resolves its last stdout line parsed as JSON; rejects when it exits
 * non-zero or outlives timeoutMs (then it is SIGKILLed). onLine sees each stdout line as it comes.
 */
export function childJson<T>(
  command: string,
  args: readonly string[],
  timeoutMs: number,
  onLine?: (line: string) => void,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    let seen = 0;
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.stdout.on("data", (d) => {
      out += d;
      if (!onLine) return;
      const lines = out.split("\n");
      for (; seen < lines.length - 1; seen++) onLine(lines[seen]!);
    });
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      const last = out.trim().split("\n").pop();
      if (code === 0 && last) resolve(JSON.parse(last) as T);
      else reject(new Error(`bench client ${command} exited ${code ?? signal}`));
    });
  });
}

/**
 * The classpath of the Java programs (test/java, built by scripts/setup/java-clients.sh), or
 * undefined (and why, on stderr) without java and mvn.
 */
export function javaClasspath(bench: string): string | undefined {
  const script = fileURLToPath(new URL("../../../scripts/setup/java-clients.sh", import.meta.url));
  const built = spawnSync("bash", [script], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  if (built.status === 0) return built.stdout.trim();
  process.stderr.write(`bench ${bench}: no Java client (scripts/setup/java-clients.sh failed)\n`);
  return undefined;
}

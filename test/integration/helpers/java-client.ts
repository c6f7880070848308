// The Java-client test programs (test/java, Kafka's Java client): built once by
// scripts/setup/java-clients.sh into the gitignored .cache/, run with `java -cp`, their JSON
// lines on stdout parsed; each run killed after a bound.
import { spawn, spawnSync } from "node:child_process";
import { resolve } from "node:path";

/** Whether `java` runs here (CI has it; .ci/run installs it with Maven). */
export function hasJava(): boolean {
  return spawnSync("java", ["-version"], { encoding: "utf8" }).status === 0;
}

/**
 * Runs scripts/setup/<script> (it fetches or builds into the gitignored .cache/ when its inputs
 * changed, a no-op otherwise) and returns the classpath it prints last.
 */
export function setupClasspath(script: string, timeoutMs = 300_000): string {
  const path = resolve(import.meta.dirname, "..", "..", "..", "scripts", "setup", script);
  const r = spawnSync("bash", [path], { encoding: "utf8", timeout: timeoutMs });
  if (r.status !== 0)
    throw new Error(
      `scripts/setup/${script} failed (${r.status ?? r.signal}): ${r.stderr}${r.error ? ` ${r.error.message}` : ""}`,
    );
  return r.stdout.trim().split("\n").at(-1)!;
}

/** Builds the programs when their sources changed (a no-op otherwise) and returns their classpath. */
export function javaClasspath(timeoutMs = 300_000): string {
  return setupClasspath("java-clients.sh", timeoutMs);
}

export interface JavaRun {
  readonly code: number | null;
  /** Every stdout line, parsed (the programs print one JSON object per line). */
  readonly events: ReadonlyArray<Record<string, any>>;
  /** The client's own log (warnings and errors), for failure messages. */
  readonly stderr: string;
  /** The client's log lines that contain one of JavaRunOptions.logLinesWith, whole. */
  readonly logLines: readonly string[];
}

export interface JavaRunOptions {
  /** Loggers (class names) to log at DEBUG besides every other at WARN. */
  readonly debugLoggers?: readonly string[];
  /** Log lines to keep whole in JavaRun.logLines (stderr keeps only its tail). */
  readonly logLinesWith?: readonly string[];
}

/** A program still running: its events so far, and its end. */
export interface JavaProcess {
  readonly pid: number;
  /** The JSON lines it printed so far, parsed, in order (grows while it runs). */
  readonly events: ReadonlyArray<Record<string, any>>;
  /** Its end (a SIGKILL included); rejects if it outlives the bound. */
  readonly exited: Promise<JavaRun>;
  /** Sends a signal (SIGKILL: a crash, no shutdown hook runs). */
  kill(signal?: NodeJS.Signals): void;
}

/** Runs tern.javaclient.<main> with these arguments; rejects if it outlives the bound. */
export function runJava(
  classpath: string,
  main: string,
  args: readonly string[],
  timeoutMs = 90_000,
  options: JavaRunOptions = {},
): Promise<JavaRun> {
  return startJava(classpath, main, args, timeoutMs, options).exited;
}

/** Starts tern.javaclient.<main>; its events are readable while it runs. Killed after timeoutMs. */
export function startJava(
  classpath: string,
  main: string,
  args: readonly string[],
  timeoutMs = 90_000,
  options: JavaRunOptions = {},
): JavaProcess {
  const child = spawn(
    "java",
    [
      "-Xmx256m",
      "-XX:TieredStopAtLevel=1", // short runs: start fast
      "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
      ...(options.debugLoggers ?? []).map((l) => `-Dorg.slf4j.simpleLogger.log.${l}=debug`),
      "-cp",
      classpath,
      `tern.javaclient.${main}`,
      ...args,
    ],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  const events: Array<Record<string, any>> = [];
  let stdout = "";
  let partialOut = "";
  let stderr = "";
  let partialLine = "";
  const logLines: string[] = [];
  const wanted = options.logLinesWith ?? [];
  child.stdout.on("data", (d: Buffer) => {
    const text = d.toString();
    stdout += text;
    const lines = (partialOut + text).split("\n");
    partialOut = lines.pop() ?? "";
    for (const l of lines)
      if (l.trim().startsWith("{")) events.push(JSON.parse(l) as Record<string, any>);
  });
  child.stderr.on("data", (d: Buffer) => {
    const text = d.toString();
    stderr = (stderr + text).slice(-20_000);
    if (wanted.length === 0) return;
    const lines = (partialLine + text).split("\n");
    partialLine = lines.pop() ?? "";
    for (const l of lines) if (wanted.some((w) => l.includes(w))) logLines.push(l);
  });
  const exited = new Promise<JavaRun>((resolvePromise, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${main} ${args.join(" ")} timed out; stdout: ${stdout} stderr: ${stderr}`));
    }, timeoutMs);
    child.once("close", (code) => {
      clearTimeout(timer);
      // A killed program may leave half a line: only a whole last line counts.
      if (partialOut.trim().startsWith("{")) {
        try {
          events.push(JSON.parse(partialOut) as Record<string, any>);
        } catch {
          // cut off by the kill
        }
      }
      resolvePromise({ code, events, stderr, logLines });
    });
  });
  return {
    pid: child.pid ?? -1,
    events,
    exited,
    kill: (signal: NodeJS.Signals = "SIGKILL") => void child.kill(signal),
  };
}

// Kafka's command-line tools (the kafka-tools and kafka_2.13 jars of Apache Kafka, fetched by
// scripts/setup/kafka-tools.sh into the gitignored .cache/), run unchanged as
// bin/kafka-run-class.sh runs them: `java -cp <every jar> <main class> <args>`, one JVM per
// command, started for speed (C1 only, class data sharing) and killed after a bound.
import { spawn } from "node:child_process";
import { setupClasspath } from "./java-client.js";

/** The main classes bin/kafka-*.sh name in Kafka 4.x. */
export const TOOL = {
  topics: "org.apache.kafka.tools.TopicCommand",
  consoleProducer: "org.apache.kafka.tools.ConsoleProducer",
  consoleConsumer: "org.apache.kafka.tools.consumer.ConsoleConsumer",
  consumerGroups: "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
  transactions: "org.apache.kafka.tools.TransactionsCommand",
  getOffsets: "org.apache.kafka.tools.GetOffsetShell",
  producerPerfTest: "org.apache.kafka.tools.ProducerPerformance",
} as const;

/** Fetches the tools when their pom changed (a no-op otherwise) and returns their classpath. */
export function kafkaToolsClasspath(timeoutMs = 300_000): string {
  return setupClasspath("kafka-tools.sh", timeoutMs);
}

export interface ToolRun {
  readonly code: number | null;
  readonly stdout: string;
  /** The tool's messages and its client's warnings (tail). */
  readonly stderr: string;
}

/** Runs one tool with these arguments (and stdin, if given); rejects if it outlives the bound. */
export function runTool(
  classpath: string,
  main: string,
  args: readonly string[],
  options: { stdin?: string; timeoutMs?: number } = {},
): Promise<ToolRun> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  return new Promise((resolvePromise, reject) => {
    const child = spawn(
      "java",
      [
        "-Xmx256m",
        "-XX:TieredStopAtLevel=1", // short runs: start fast
        "-Xshare:auto",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-cp",
        classpath,
        main,
        ...args,
      ],
      { stdio: ["pipe", "pipe", "pipe"] },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr = (stderr + d.toString()).slice(-20_000)));
    child.stdin.on("error", () => undefined); // a tool that exits early closes its stdin
    child.stdin.end(options.stdin ?? "");
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${main} ${args.join(" ")} timed out; stdout: ${stdout} stderr: ${stderr}`));
    }, timeoutMs);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolvePromise({ code, stdout, stderr });
    });
  });
}

/**
 * The rows of a table the tools print (a header line, then one line per row; columns separated
 * by tabs or runs of spaces), as objects keyed by the header's column names.
 */
export function parseTable(text: string, firstColumn: string): Array<Record<string, string>> {
  const lines = text.split("\n").map((l) => l.trim());
  const at = lines.findIndex((l) => l.split(/\s+/)[0] === firstColumn);
  if (at < 0) return [];
  const columns = lines[at]!.split(/\s+/);
  const rows: Array<Record<string, string>> = [];
  for (const line of lines.slice(at + 1)) {
    if (line === "") break;
    const cells = line.split(/\s+/);
    rows.push(Object.fromEntries(columns.map((c, i) => [c, cells[i] ?? ""])));
  }
  return rows;
}

// tern verify: runs a bounded transactional workload against a running cluster (tern's gRPC
// API, or any Kafka-protocol cluster), records its history and checks it (libs/verify).
// docs/verify.md. Exit codes: 0 no anomaly, 3 anomalies found, 1 could not run, 2 usage.
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Command } from "commander";
import { checkHistory } from "../../libs/verify/checker.js";
import type { VerifyDriver } from "../../libs/verify/driver.js";
import { GrpcDriver } from "../../libs/verify/grpc-driver.js";
import { KafkaDriver, type KafkaDriverOptions } from "../../libs/verify/kafka-driver.js";
import { buildReport, formatReport } from "../../libs/verify/report.js";
import { runWorkload } from "../../libs/verify/workload.js";
import { parseIntArg, printJson, UsageError } from "../output.js";
import { readCliPassword, type CliCredentialOptions } from "./cli-credentials.js";
import type { CliTlsOptions } from "./cli-tls.js";
import { globals } from "./context.js";

/** Anomalies found: distinct from 1 (could not run: the cluster refused or was unreachable). */
export const EXIT_ANOMALY = 3;

const PROGRESS_WIDTH = 30;

interface VerifyOptions {
  duration: string;
  rate: string;
  topics: string;
  partitions: string;
  topicPrefix: string;
  protocol: string;
  replicationFactor: string;
  settleTimeout: string;
  seed?: string;
  keep?: boolean;
  saslMechanism: string;
}

function readFile(path: string, flag: string): Buffer {
  try {
    return readFileSync(path);
  } catch (e) {
    throw new UsageError(`${flag} ${path}: cannot read (${(e as NodeJS.ErrnoException).code})`);
  }
}

/** The Kafka client's settings from the same TLS and SCRAM flags (and env) as every command. */
function kafkaOptions(
  cmd: Command,
  o: VerifyOptions,
  replicationFactor: number,
): KafkaDriverOptions {
  const g = cmd.optsWithGlobals() as { bootstrap?: string } & CliTlsOptions & CliCredentialOptions;
  const bootstrap = g.bootstrap ?? process.env.TERN_BOOTSTRAP;
  if (bootstrap === undefined)
    throw new UsageError("--protocol kafka needs --bootstrap with the brokers' Kafka listeners");
  const caFile = g.tlsCaFile ?? process.env.TERN_TLS_CA_FILE;
  const certFile = g.tlsCertFile ?? process.env.TERN_TLS_CERT_FILE;
  const keyFile = g.tlsKeyFile ?? process.env.TERN_TLS_KEY_FILE;
  if (caFile === undefined && (certFile !== undefined || keyFile !== undefined))
    throw new UsageError("--tls-cert-file/--tls-key-file need --tls-ca-file (or TERN_TLS_CA_FILE)");
  const mechanism = o.saslMechanism.toLowerCase();
  if (mechanism !== "scram-sha-256" && mechanism !== "scram-sha-512")
    throw new UsageError(
      `--sasl-mechanism must be scram-sha-256 or scram-sha-512, got ${mechanism}`,
    );
  const credentials = readCliPassword(g);
  return {
    brokers: bootstrap
      .split(",")
      .map((a) => a.trim())
      .filter((a) => a.length > 0),
    replicationFactor,
    ...(caFile !== undefined
      ? {
          ssl: {
            ca: readFile(caFile, "--tls-ca-file"),
            ...(certFile !== undefined ? { cert: readFile(certFile, "--tls-cert-file") } : {}),
            ...(keyFile !== undefined ? { key: readFile(keyFile, "--tls-key-file") } : {}),
          },
        }
      : {}),
    ...(credentials ? { sasl: { mechanism, ...credentials } } : {}),
  };
}

/** A progress bar on stderr, only when it is a terminal (logs and pipes get nothing). */
function progressBar(): { update: (phase: string, fraction: number) => void; done: () => void } {
  if (!process.stderr.isTTY) return { update: () => undefined, done: () => undefined };
  return {
    update: (phase, fraction) => {
      const filled = Math.round(Math.min(1, Math.max(0, fraction)) * PROGRESS_WIDTH);
      process.stderr.write(
        `\r[${"#".repeat(filled).padEnd(PROGRESS_WIDTH, ".")}] ${phase.padEnd(16)}`,
      );
    },
    done: () => process.stderr.write(`\r${" ".repeat(PROGRESS_WIDTH + 20)}\r`),
  };
}

async function verify(o: VerifyOptions, cmd: Command): Promise<void> {
  const protocol = o.protocol;
  if (protocol !== "grpc" && protocol !== "kafka")
    throw new UsageError(`--protocol must be grpc or kafka, got ${protocol}`);
  const durationS = parseIntArg(o.duration, "--duration", 1);
  const rate = parseIntArg(o.rate, "--rate", 1);
  const topics = parseIntArg(o.topics, "--topics", 1);
  const partitions = parseIntArg(o.partitions, "--partitions", 1);
  const replicationFactor = parseIntArg(o.replicationFactor, "--replication-factor", 1);
  const settleTimeoutS = parseIntArg(o.settleTimeout, "--settle-timeout", 1);
  const seed = o.seed === undefined ? Date.now() % 1_000_000 : parseIntArg(o.seed, "--seed");
  if (!/^[A-Za-z0-9._-]+$/.test(o.topicPrefix))
    throw new UsageError(`--topic-prefix may hold letters, digits, '.', '_' and '-' only`);
  let driver: VerifyDriver;
  let json: boolean;
  if (protocol === "grpc") {
    const g = globals(cmd);
    json = g.json;
    driver = new GrpcDriver({ ...g.client, replicationFactor });
  } else {
    json = Boolean((cmd.optsWithGlobals() as { json?: boolean }).json);
    driver = new KafkaDriver(kafkaOptions(cmd, o, replicationFactor));
  }
  const runId = `${o.topicPrefix}-${randomBytes(4).toString("hex")}`;
  const bar = progressBar();
  try {
    const workload = await runWorkload(driver, {
      runId,
      topics,
      partitions,
      durationMs: durationS * 1000,
      rate,
      settleTimeoutMs: settleTimeoutS * 1000,
      seed,
      onProgress: bar.update,
    }).finally(() => bar.done());
    const report = buildReport({
      protocol,
      runId,
      durationS,
      workload,
      check: checkHistory(workload.history),
    });
    if (!o.keep)
      await driver.deleteTopics(workload.topics).catch((e: unknown) => {
        process.stderr.write(`warning: could not delete the run's topics: ${String(e)}\n`);
      });
    if (json) printJson({ ...report, seed });
    else process.stdout.write(`${formatReport(report)}\n`);
    process.exitCode = report.pass ? 0 : EXIT_ANOMALY;
  } finally {
    await driver.close().catch(() => undefined);
  }
}

export function registerVerify(program: Command): void {
  program
    .command("verify")
    .description(
      "run a bounded transactional workload and check its history for lost, duplicated, aborted or torn reads (docs/verify.md); exit 0 only when no anomaly, 3 on anomalies",
    )
    .option("--duration <s>", "seconds of workload", "30")
    .option("--rate <n>", "producer transactions per second, over all producers", "20")
    .option("--topics <n>", "input topics (each with an output topic of its own)", "1")
    .option("--partitions <n>", "partitions per topic", "3")
    .option("--topic-prefix <prefix>", "prefix of the run's topics, ids and group", "tern-verify")
    .option("--protocol <grpc|kafka>", "tern's gRPC API, or the Kafka protocol (kafkajs)", "grpc")
    .option("--replication-factor <n>", "replicas of each topic", "3")
    .option("--settle-timeout <s>", "bound on draining, fencing and the final read", "60")
    .option("--seed <n>", "seed of the workload's random choices")
    .option("--keep", "keep the run's topics (deleted by default)")
    .option(
      "--sasl-mechanism <mechanism>",
      "with --protocol kafka and --username: scram-sha-256 or scram-sha-512",
      "scram-sha-512",
    )
    .action((o: VerifyOptions, cmd: Command) => verify(o, cmd));
}

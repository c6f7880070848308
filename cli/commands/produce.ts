// tern produce TOPIC: records from stdin (one per line, optional KEY<sep>VALUE) or generated
// (--generate N), with optional headers (-H k=v) and a record timestamp. Progress on stderr; a
// one-line summary (or --json) on stdout; with --generate, also kafka-producer-perf-test's
// throughput and latency percentiles.
import { CODECS, isCodec } from "../../libs/records/compression.js";
import { createInterface } from "node:readline";
import type { Command } from "commander";
import { Producer, type RecordMetadata } from "../../libs/client/index.js";
import { EXIT_CLUSTER_ERROR, parseIntArg, printJson, progress, UsageError } from "../output.js";
import { globals } from "./context.js";
import { formatSummary, LatencyRecorder } from "../latency-summary.js";

const PROGRESS_EVERY = 1_000;
/** Sends awaited at once before reading more input: bounds memory on large inputs. */
const WINDOW_MAX = 10_000;

interface ProduceOptions {
  generate?: string;
  keySeparator?: string;
  partition?: string;
  acks: string;
  transactionalId?: string;
  size: string;
  lingerMs: string;
  header?: string[];
  timestamp?: string;
  compression: string;
}

const HEADERS_MAX = 64;

function parseHeaders(entries: readonly string[]): Record<string, string> {
  if (entries.length > HEADERS_MAX) throw new UsageError(`at most ${HEADERS_MAX} headers`);
  const out: Record<string, string> = {};
  for (const kv of entries) {
    const i = kv.indexOf("=");
    if (i <= 0) throw new UsageError(`--header takes key=value, got "${kv}"`);
    out[kv.slice(0, i)] = kv.slice(i + 1);
  }
  return out;
}

export function registerProduce(program: Command): void {
  program
    .command("produce <topic>")
    .description("produce records from stdin lines or --generate N")
    .option("-g, --generate <n>", "generate N records instead of reading stdin")
    .option("-k, --key-separator <sep>", "split each line into KEY<sep>VALUE")
    .option("-p, --partition <n>", "send every record to this partition")
    .option("--acks <n>", "-1 (all) or 1", "-1")
    .option("--transactional-id <id>", "produce everything in one transaction")
    .option("--size <bytes>", "value size of generated records", "100")
    .option("--linger-ms <ms>", "batch linger", "5")
    .option("-H, --header <key=value...>", "add this header to every record")
    .option(
      "--timestamp <ms>",
      "record timestamp of every record (ms since the epoch; default: now)",
    )
    .option("-z, --compression <codec>", "none, gzip, snappy, lz4 or zstd", "none")
    .action(async (topic: string, o: ProduceOptions, cmd: Command) => {
      const g = globals(cmd);
      const acks = o.acks === "1" ? 1 : o.acks === "-1" || o.acks === "all" ? -1 : undefined;
      if (acks === undefined) throw new UsageError(`--acks must be -1 or 1, got ${o.acks}`);
      const total = o.generate === undefined ? undefined : parseIntArg(o.generate, "--generate", 0);
      const partition =
        o.partition === undefined ? undefined : parseIntArg(o.partition, "--partition");
      const size = parseIntArg(o.size, "--size");
      const headers = parseHeaders(o.header ?? []);
      const timestampMs =
        o.timestamp === undefined ? undefined : parseIntArg(o.timestamp, "--timestamp");
      const extras = {
        ...(Object.keys(headers).length > 0 ? { headers } : {}),
        ...(timestampMs === undefined ? {} : { timestampMs }),
      };
      if (!isCodec(o.compression))
        throw new UsageError(
          `--compression must be one of ${CODECS.join(", ")}, got ${o.compression}`,
        );
      const compression = o.compression;
      const latencies = new LatencyRecorder();
      const startedMs = performance.now();
      const producer = new Producer({
        ...g.client,
        acks,
        lingerMs: parseIntArg(o.lingerMs, "--linger-ms"),
        compression,
        ...(o.transactionalId ? { transactionalId: o.transactionalId } : {}),
      });
      let sent = 0;
      let failed = 0;
      let firstError: string | undefined;
      let window: Array<Promise<RecordMetadata | undefined>> = [];
      const settle = async (): Promise<void> => {
        await Promise.all(window);
        window = [];
      };
      const send = async (key: string | null, value: string): Promise<void> => {
        const sentAtMs = performance.now();
        window.push(
          producer
            .send({
              topic,
              key,
              value,
              ...extras,
              ...(partition === undefined ? {} : { partition }),
            })
            .then(
              (m) => {
                sent += 1;
                latencies.record(performance.now() - sentAtMs, value.length + (key?.length ?? 0));
                if (sent % PROGRESS_EVERY === 0) progress(sent, total, "produced");
                return m;
              },
              (e) => {
                failed += 1;
                firstError ??= String((e as Error).message ?? e);
                return undefined;
              },
            ),
        );
        if (window.length >= WINDOW_MAX) await settle();
      };
      try {
        if (o.transactionalId) {
          await producer.initTransactions();
          producer.beginTransaction();
        }
        if (total !== undefined) {
          const pad = "x".repeat(size);
          for (let i = 0; i < total; i++)
            await send(
              `key-${i}`,
              `record-${i} ${pad}`.slice(0, Math.max(size, `record-${i}`.length)),
            );
        } else {
          const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
          for await (const line of lines) {
            if (line.length === 0) continue;
            const i = o.keySeparator ? line.indexOf(o.keySeparator) : -1;
            await send(
              i >= 0 ? line.slice(0, i) : null,
              i >= 0 ? line.slice(i + o.keySeparator!.length) : line,
            );
          }
        }
        await producer.flush();
        await settle();
        if (o.transactionalId) {
          if (failed > 0) await producer.abortTransaction();
          else await producer.commitTransaction();
        }
      } finally {
        await producer.close();
      }
      if (process.stderr.isTTY) process.stderr.write("\n");
      const perf =
        total === undefined ? undefined : latencies.summary(performance.now() - startedMs);
      if (g.json)
        printJson({
          topic,
          produced: sent,
          failed,
          ...(firstError ? { error: firstError } : {}),
          ...(perf ? { perf } : {}),
        });
      else {
        process.stdout.write(
          `produced ${sent} records to ${topic}${failed > 0 ? `, ${failed} failed (${firstError})` : ""}\n`,
        );
        if (perf) process.stdout.write(`${formatSummary(perf)}\n`);
      }
      if (failed > 0) process.exitCode = EXIT_CLUSTER_ERROR;
    });
}

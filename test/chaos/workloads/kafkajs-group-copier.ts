// The chaos suite's kafkajs copier (workload "kafkajs-copier"): kafka-group-copier.py's loop on
// kafkajs, a transactions-V1 client (one epoch across transactions, EndTxn below v5) like
// librdkafka but with its own retry and rebalance logic. A classic consumer group member
// (read_committed, no auto-commit) reads INPUT; each batch of a partition goes to the same
// partition of OUTPUT, transformed as the demo does, in one transaction with the next input
// offset (sendOffsets). It prints the history the chaos checker reads, one JSON line per event,
// in copier.ts's CopierHistoryEvent shapes ("owned", "begin", "end"). SIGTERM: finish the
// current transaction, leave the group and exit 0. A fenced producer exits 3; a transaction
// whose outcome this process cannot know (a failed commit or abort) exits 4, and the workload
// starts a new process with the same transactional id.
// usage: node kafkajs-group-copier.js BOOTSTRAP GROUP INPUT OUTPUT TRANSACTIONAL_ID [TXN_TIMEOUT_MS]
import { readFileSync } from "node:fs";
import kafkajs from "kafkajs";
import type { CopierHistoryEvent } from "../../../scripts/demo/copier.js";
import { transform } from "../../../scripts/demo/transform.js";

const { Kafka, logLevel } = kafkajs;
const MAX_POLL_RECORDS = 20;
/** The chaos cluster's group session timeout is 6 s (chaos-cluster.ts). */
const SESSION_TIMEOUT_MS = 6_000;
const REQUEST_TIMEOUT_MS = 30_000;
const FENCED = new Set([
  "PRODUCER_FENCED",
  "INVALID_PRODUCER_EPOCH",
  "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
]);

function emit(event: CopierHistoryEvent | { event: "owned"; partitions: number[] }): void {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}

/** The protocol error's type (kafkajs' name for Kafka's error code), or the error's name. */
function errorType(e: unknown): string {
  const err = e as { type?: string; name?: string; originalError?: unknown };
  if (typeof err?.type === "string") return err.type;
  if (err?.originalError !== undefined) return errorType(err.originalError);
  return typeof err?.name === "string" ? err.name : String(e);
}

function describe(e: unknown): string {
  return `${errorType(e)}: ${e instanceof Error ? e.message : String(e)}`.slice(0, 200);
}

/** SSL to a TLS cluster (chaos --tls sets TERN_TLS_*_FILE, as the CLI reads them); undefined for plaintext. */
function tlsConfig(): { ca: Buffer[]; cert?: Buffer; key?: Buffer } | undefined {
  const ca = process.env.TERN_TLS_CA_FILE;
  if (!ca) return undefined;
  const cert = process.env.TERN_TLS_CERT_FILE;
  const key = process.env.TERN_TLS_KEY_FILE;
  return {
    ca: [readFileSync(ca)],
    ...(cert && key ? { cert: readFileSync(cert), key: readFileSync(key) } : {}),
  };
}

async function main(): Promise<void> {
  const [bootstrap, group, source, sink, txnId, timeoutArg] = process.argv.slice(2);
  if (!bootstrap || !group || !source || !sink || !txnId) {
    process.stderr.write(
      "usage: kafkajs-group-copier.js BOOTSTRAP GROUP INPUT OUTPUT TRANSACTIONAL_ID [TXN_TIMEOUT_MS]\n",
    );
    process.exit(2);
  }
  const ssl = tlsConfig();
  const kafka = new Kafka({
    clientId: txnId,
    brokers: bootstrap.split(","),
    logLevel: logLevel.NOTHING,
    requestTimeout: REQUEST_TIMEOUT_MS,
    retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 2_000 },
    ...(ssl ? { ssl } : {}),
  });
  // A scenario may give the producer a request timeout and a bound on produce retries (kafkajs'
  // default for an idempotent producer retries for ever): a produce left unanswered then fails
  // the transaction, which this copier aborts (hold-txn-batch-kafkajs-copier).
  const producerTimeoutMs = Number(process.env.CHAOS_KAFKAJS_PRODUCER_REQUEST_TIMEOUT_MS ?? 0);
  const producerRetries = Number(process.env.CHAOS_KAFKAJS_PRODUCER_RETRIES ?? 0);
  const producerKafka =
    producerTimeoutMs > 0
      ? new Kafka({
          clientId: txnId,
          brokers: bootstrap.split(","),
          logLevel: logLevel.NOTHING,
          requestTimeout: producerTimeoutMs,
          retry: { retries: 8, initialRetryTime: 100, maxRetryTime: 2_000 },
          ...(ssl ? { ssl } : {}),
        })
      : kafka;
  const producer = producerKafka.producer({
    transactionalId: txnId,
    idempotent: true,
    maxInFlightRequests: 1,
    transactionTimeout: Number(timeoutArg ?? 20_000),
    ...(producerRetries > 0 ? { retry: { retries: producerRetries } } : {}),
  });
  const consumer = kafka.consumer({
    groupId: group,
    sessionTimeout: SESSION_TIMEOUT_MS,
    heartbeatInterval: 500,
    readUncommitted: false,
    maxWaitTimeInMs: 500,
  });
  let stopping = false;
  let fatal: number | undefined;
  let reported: string | undefined;
  let n = 0;
  const finished = new Promise<void>((resolve) => {
    const stop = (): void => {
      stopping = true;
      resolve();
    };
    process.once("SIGTERM", stop);
    process.once("SIGINT", stop);
  });
  const exitWith = (code: number): void => {
    fatal = code;
    process.kill(process.pid, "SIGTERM");
  };
  await producer.connect();
  await consumer.connect();
  consumer.on(consumer.events.GROUP_JOIN, (e) => {
    const owned = [...(e.payload.memberAssignment[source] ?? [])].sort((a, b) => a - b);
    const key = owned.join(",");
    if (key === reported) return;
    reported = key;
    emit({ event: "owned", partitions: owned });
  });
  await consumer.subscribe({ topic: source, fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
      if (stopping || fatal !== undefined || !isRunning() || isStale()) return;
      const records = batch.messages.slice(0, MAX_POLL_RECORDS);
      if (records.length === 0) return;
      const partition = batch.partition;
      const txn = n++;
      emit({
        event: "begin",
        txn,
        polled: records.map((m) => [partition, m.offset, m.value?.toString() ?? ""]),
      });
      const last = records[records.length - 1]!;
      let committing = false;
      const transaction = await producer.transaction();
      try {
        const [written] = await transaction.send({
          topic: sink,
          acks: -1,
          messages: records.map((m) => ({
            partition,
            key: m.key,
            value: transform(m.value?.toString() ?? ""),
          })),
        });
        await transaction.sendOffsets({
          consumerGroupId: group,
          topics: [
            { topic: source, partitions: [{ partition, offset: String(Number(last.offset) + 1) }] },
          ],
        });
        committing = true;
        await transaction.commit();
        const base = Number(written?.baseOffset ?? -1);
        emit({
          event: "end",
          txn,
          outcome: "ok",
          sent: records.map((_, i) => [partition, base >= 0 ? String(base + i) : "-1"]),
        });
        resolveOffset(last.offset);
        await heartbeat();
      } catch (e) {
        const type = errorType(e);
        if (FENCED.has(type)) {
          emit({ event: "end", txn, outcome: "unknown", sent: [], error: `fatal ${describe(e)}` });
          exitWith(3);
          return;
        }
        let aborted = false;
        if (!committing) {
          try {
            await transaction.abort();
            aborted = true;
          } catch (abortError) {
            process.stderr.write(`abort failed: ${describe(abortError)}\n`);
          }
        }
        emit({
          event: "end",
          txn,
          outcome: aborted ? "fail" : "unknown",
          sent: [],
          error: describe(e),
        });
        if (!aborted) {
          exitWith(4);
          return;
        }
        // What the aborted transaction polled is polled again.
        consumer.seek({ topic: source, partition, offset: records[0]!.offset });
      }
    },
  });
  await finished;
  await consumer.disconnect().catch(() => undefined);
  await producer.disconnect().catch(() => undefined);
  process.exit(fatal ?? 0);
}

main().catch((e: unknown) => {
  process.stderr.write(`kafkajs copier: ${describe(e)}\n`);
  process.exit(1);
});

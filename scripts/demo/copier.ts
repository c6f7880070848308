// The exactly-once demo application: consume-transform-produce. Reads its input partitions
// read_committed, writes transform(value) to the same partition number of the output topic,
// and commits the input offsets INSIDE each transaction (sendOffsetsToTransaction), so after
// any crash the restarted copier resumes exactly where the last committed transaction ended.
// With --subscribe the instances form one consumer group (KIP-848) and the coordinator spreads
// the input partitions over them; the consumer's real group metadata goes with the offsets,
// so a zombie instance (fenced from the group) cannot commit: its transaction aborts. Partitions
// only move inside poll(), between transactions, so no transaction spans a revocation.
// Run as a process: node dist/scripts/demo/copier.js --input IN --output OUT --group G
//   --transactional-id ID [--partitions 0,1 | --subscribe] [--exit-when-idle-ms N] [--progress]
//   [--bootstrap HOST:PORT] [--stall-before-offsets-after N (tests: pause 1 s before the
//   offsets of transaction N+1, printing "stalling")] [--history (chaos: one JSON line per
//   transaction begun and ended, and per assignment change, on stdout)]
import { parseArgs } from "node:util";
import {
  Consumer,
  Producer,
  LOCAL_BOOTSTRAP,
  Admin,
  type ClientTlsFiles,
  type TopicPartition,
} from "../../libs/client/index.js";
import { transform } from "./transform.js";

export interface CopierOptions {
  readonly bootstrap: string;
  /** The clients' TLS (default: TERN_TLS_* from the environment, else plaintext). */
  readonly tls?: ClientTlsFiles;
  readonly input: string;
  readonly output: string;
  readonly groupId: string;
  readonly transactionalId: string;
  /** Input partitions this instance owns (default: all). Instances must not overlap. */
  readonly partitions?: readonly number[];
  /** Join the group with subscribe() instead: partitions come from the group coordinator. */
  readonly subscribe?: boolean;
  /** Tests: after this many transactions, wait 1 s (logging "stalling") before sending offsets. */
  readonly stallBeforeOffsetsAfter?: number;
  /** Default 30000. */
  readonly transactionTimeoutMs?: number;
  readonly maxPollRecords?: number;
  /** Return once nothing arrived for this long and every owned partition is at its end. */
  readonly exitWhenIdleMs?: number;
  readonly log?: (line: string) => void;
  /** Stops the loop when it returns true (checked between transactions). */
  readonly shouldStop?: () => boolean;
  /** Called after each committed transaction. */
  readonly onCommit?: (result: CopierResult) => void;
  /** Chaos history: every transaction's polled records, outcome and written offsets. */
  readonly onHistory?: (event: CopierHistoryEvent) => void;
}

/**
 * What a chaos checker needs of each transaction: what it polled (before it begins) and how it
 * ended with the offsets of what it wrote. "unknown": the commit was attempted and failed, so it
 * may have committed; a transaction begun and never ended (the process died) is unknown too.
 */
export type CopierHistoryEvent =
  | {
      readonly event: "begin";
      readonly txn: number;
      readonly polled: Array<[partition: number, offset: string, value: string]>;
    }
  | {
      readonly event: "end";
      readonly txn: number;
      readonly outcome: "ok" | "fail" | "unknown";
      readonly sent: Array<[partition: number, offset: string]>;
      readonly error?: string;
    }
  | { readonly event: "owned"; readonly partitions: number[] };

export interface CopierResult {
  transactions: number;
  records: number;
  aborted: number;
}

const POLL_TIMEOUT_MS = 500;
const ABORTS_MAX = 100;
/**
 * The least a member without partitions waits before it exits idle: a joining member gets
 * partitions only on its first heartbeat after their owner revoked them, which can be two
 * heartbeat intervals (5 s by default) after it joined.
 */
const UNASSIGNED_IDLE_MS_MIN = 12_000;

export async function runCopier(o: CopierOptions): Promise<CopierResult> {
  const log = o.log ?? (() => {});
  const fixed: TopicPartition[] = o.subscribe
    ? []
    : (o.partitions ?? (await inputPartitions(o.bootstrap, o.input, o.tls))).map((partition) => ({
        topic: o.input,
        partition,
      }));
  const owned = (): TopicPartition[] => (o.subscribe ? consumer.assignment() : fixed);
  const producer = new Producer({
    bootstrap: o.bootstrap,
    ...(o.tls ? { tls: o.tls } : {}),
    transactionalId: o.transactionalId,
    lingerMs: 2,
    transactionTimeoutMs: o.transactionTimeoutMs ?? 30_000,
  });
  const consumer = new Consumer({
    bootstrap: o.bootstrap,
    ...(o.tls ? { tls: o.tls } : {}),
    groupId: o.groupId,
    isolationLevel: "read_committed",
    autoOffsetReset: "earliest",
    clientId: o.transactionalId,
  });
  const result: CopierResult = { transactions: 0, records: 0, aborted: 0 };
  const history = o.onHistory ?? (() => {});
  // Assignment changes are applied inside poll(): reported after each poll that changed them.
  let reportedOwned = "";
  const reportOwned = (): void => {
    const partitions = consumer
      .assignment()
      .map((t) => t.partition)
      .sort((a, b) => a - b);
    if (partitions.join(",") !== reportedOwned) history({ event: "owned", partitions });
    reportedOwned = partitions.join(",");
  };
  let txnNo = 0;
  try {
    await producer.initTransactions();
    if (o.subscribe) {
      consumer.subscribe([o.input], {
        onPartitionsAssigned: (tps) => log(`assigned ${tps.map((t) => t.partition).join(",")}`),
        onPartitionsRevoked: (tps) => log(`revoked ${tps.map((t) => t.partition).join(",")}`),
        onPartitionsLost: (tps) => log(`lost ${tps.map((t) => t.partition).join(",")}`),
      });
    } else {
      consumer.assign(fixed);
    }
    let idleSinceMs = Date.now();
    while (!o.shouldStop?.()) {
      const records = await consumer.poll({
        maxPollRecords: o.maxPollRecords ?? 500,
        timeoutMs: POLL_TIMEOUT_MS,
      });
      if (o.onHistory) reportOwned();
      if (records.length === 0) {
        const idleMs = Date.now() - idleSinceMs;
        // A member without partitions (yet) waits longer: the group may still give it some.
        if (
          o.exitWhenIdleMs !== undefined &&
          owned().length === 0 &&
          idleMs >= Math.max(3 * o.exitWhenIdleMs, UNASSIGNED_IDLE_MS_MIN)
        )
          break;
        if (
          o.exitWhenIdleMs !== undefined &&
          idleMs >= o.exitWhenIdleMs &&
          owned().length > 0 &&
          (await atEnd(consumer, owned()))
        )
          break;
        continue;
      }
      idleSinceMs = Date.now();
      const n = txnNo++;
      history({
        event: "begin",
        txn: n,
        polled: records.map((r) => [r.partition, String(r.offset), r.value?.toString() ?? ""]),
      });
      let committing = false;
      try {
        producer.beginTransaction();
        // Failures surface through commitTransaction; the catch keeps them from being unhandled.
        const sends = records.map((r) =>
          producer
            .send({
              topic: o.output,
              partition: r.partition,
              key: r.key,
              value: transform(r.value?.toString() ?? ""),
            })
            .catch((e: unknown) => (e instanceof Error ? e : new Error(String(e)))),
        );
        const tps = owned();
        const offsets = await Promise.all(
          tps.map(async (tp) => ({ ...tp, offset: await consumer.position(tp) })),
        );
        if (
          o.stallBeforeOffsetsAfter !== undefined &&
          result.transactions === o.stallBeforeOffsetsAfter
        ) {
          log("stalling");
          await new Promise((r) => setTimeout(r, 1_000));
        }
        await producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
        committing = true;
        await producer.commitTransaction();
        const written = await Promise.all(sends);
        history({
          event: "end",
          txn: n,
          outcome: "ok",
          sent: written.map((m) =>
            m instanceof Error ? [-1, "-1"] : [m.partition, String(m.offset)],
          ),
        });
        result.transactions += 1;
        result.records += records.length;
        o.onCommit?.(result);
      } catch (e) {
        const err = e as { fatal?: boolean; message?: string };
        if (err.fatal) throw e;
        log(`transaction failed (${err.message}); aborting and rewinding to the committed offsets`);
        result.aborted += 1;
        if (result.aborted > ABORTS_MAX) throw e;
        const aborted = await producer.abortTransaction().then(
          () => true,
          (abortError) => (log(`abort failed: ${String(abortError)}`), false),
        );
        history({
          event: "end",
          txn: n,
          outcome: committing || !aborted ? "unknown" : "fail",
          sent: [],
          error: err.message?.slice(0, 200),
        });
        // A fenced member's partitions are dropped by its next poll (lost); rewind what it still holds.
        for (const c of await consumer.committed(owned()))
          if (consumer.assignment().some((a) => a.topic === c.topic && a.partition === c.partition))
            consumer.seek(c, c.offset ?? 0n);
      }
    }
    return result;
  } finally {
    await producer.close({ timeoutMs: 5_000 }).catch(() => undefined);
    await consumer.close();
  }
}

async function inputPartitions(
  bootstrap: string,
  topic: string,
  tls: ClientTlsFiles | undefined,
): Promise<number[]> {
  const admin = new Admin({ bootstrap, ...(tls ? { tls } : {}) });
  try {
    const [d] = await admin.describeTopics([topic]);
    if (!d || d.error || !d.topic) throw d?.error ?? new Error(`topic ${topic} not found`);
    return d.topic.partitions.map((p) => p.partition);
  } finally {
    await admin.close();
  }
}

async function atEnd(consumer: Consumer, tps: readonly TopicPartition[]): Promise<boolean> {
  const ends = await consumer.endOffsets(tps);
  for (const e of ends) if ((await consumer.position(e)) < e.offset) return false;
  return true;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      bootstrap: { type: "string", default: process.env.TERN_BOOTSTRAP ?? LOCAL_BOOTSTRAP },
      input: { type: "string" },
      output: { type: "string" },
      group: { type: "string" },
      "transactional-id": { type: "string" },
      partitions: { type: "string" },
      "max-poll-records": { type: "string" },
      "exit-when-idle-ms": { type: "string" },
      progress: { type: "boolean", default: false },
      subscribe: { type: "boolean", default: false },
      "stall-before-offsets-after": { type: "string" },
      "transaction-timeout-ms": { type: "string" },
      history: { type: "boolean", default: false },
    },
  });
  if (!values.input || !values.output || !values.group || !values["transactional-id"]) {
    process.stderr.write(
      "usage: copier --input IN --output OUT --group G --transactional-id ID [--partitions 0,1] [--exit-when-idle-ms N] [--bootstrap HOST:PORT]\n",
    );
    process.exit(2);
  }
  const log = (line: string): void =>
    void process.stderr.write(`[copier ${values["transactional-id"]}] ${line}\n`);
  let stop = false;
  process.once("SIGTERM", () => (stop = true));
  const result = await runCopier({
    bootstrap: values.bootstrap!,
    input: values.input,
    output: values.output,
    groupId: values.group,
    transactionalId: values["transactional-id"],
    ...(values.partitions ? { partitions: values.partitions.split(",").map(Number) } : {}),
    ...(values["max-poll-records"] ? { maxPollRecords: Number(values["max-poll-records"]) } : {}),
    ...(values["exit-when-idle-ms"] ? { exitWhenIdleMs: Number(values["exit-when-idle-ms"]) } : {}),
    ...(values.subscribe ? { subscribe: true } : {}),
    ...(values["stall-before-offsets-after"]
      ? { stallBeforeOffsetsAfter: Number(values["stall-before-offsets-after"]) }
      : {}),
    ...(values["transaction-timeout-ms"]
      ? { transactionTimeoutMs: Number(values["transaction-timeout-ms"]) }
      : {}),
    log,
    shouldStop: () => stop,
    ...(values.progress
      ? {
          onCommit: (r: CopierResult) =>
            void process.stdout.write(`committed ${r.transactions} ${r.records}\n`),
        }
      : {}),
    ...(values.history
      ? {
          onHistory: (e: CopierHistoryEvent) => void process.stdout.write(`${JSON.stringify(e)}\n`),
        }
      : {}),
  });
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

if (process.argv[1]?.endsWith("/scripts/demo/copier.js")) {
  main().then(
    () => process.exit(0),
    (e) => {
      process.stderr.write(`copier failed: ${String((e as Error)?.stack ?? e)}\n`);
      process.exit(1);
    },
  );
}

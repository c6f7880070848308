// The client process of the txn benchmark: runs jobs (_txn-job.ts) that arrive as JSON lines
// on stdin, one at a time, with the real TypeScript client (libs/client), and answers each with
// one JSON line on stdout; progress on stderr. Its own process, so the cluster and the
// benchmark driver do not share its event loop; one process for all jobs, so the benchmark
// pays Node's and the client's start-up once. Every job makes its own Producer or Consumer.
import { Consumer, Producer, type TopicPartition } from "../../libs/client/index.js";
import { createInterface } from "node:readline";
import type {
  FetchJob,
  FetchResult,
  Job,
  PacedJob,
  PacedResult,
  ProduceJob,
  ProduceResult,
  WorkerAnswer,
} from "./_txn-job.js";

/** A transaction that fails this many times in a row ends the run (the figure would be meaningless). */
const ABORTS_IN_A_ROW_MAX = 20;
const CLOSE_TIMEOUT_MS = 10_000;
const DRAIN_TIMEOUT_MS = 120_000;
const POLL_RECORDS_MAX = 20_000;
const POLL_TIMEOUT_MS = 500;
/** A read stops after this long without a record even if the end offsets were not reached. */
const FETCH_IDLE_MS_MAX = 3_000;
/** The send loop gives the event loop (the sender, the network) a turn this often. */
const YIELD_EVERY_RECORDS = 64;

const yieldTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function log(message: string): void {
  process.stderr.write(`txn-worker: ${message}\n`);
}

/** Counts records handed to send() and not yet settled; lets the loop wait for room (bounded memory). */
class Pending {
  count = 0;
  private waiter: { below: number; wake: () => void } | undefined;

  constructor(readonly max: number) {}

  track(p: Promise<unknown>, onOk: () => void, onError: (e: unknown) => void): void {
    this.count += 1;
    void p.then(onOk, onError).then(() => {
      this.count -= 1;
      if (this.waiter && this.count < this.waiter.below) {
        const { wake } = this.waiter;
        this.waiter = undefined;
        wake();
      }
    });
  }

  /** Resolves once fewer than `below` records are pending, or after timeoutMs (then false). */
  async waitBelow(below: number, timeoutMs: number): Promise<boolean> {
    if (this.count < below) return true;
    let timer: NodeJS.Timeout | undefined;
    const woke = await Promise.race([
      new Promise<boolean>((resolve) => (this.waiter = { below, wake: () => resolve(true) })),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs))),
    ]);
    clearTimeout(timer);
    this.waiter = undefined;
    return woke;
  }
}

function newProducer(job: ProduceJob): Producer {
  return new Producer({
    bootstrap: job.bootstrap,
    acks: -1,
    batchSize: job.batchBytes,
    lingerMs: job.lingerMs,
    maxInFlightPerPartition: job.maxInFlightPerPartition,
    bufferMemory: Math.max(32 * 1024 * 1024, 2 * job.pendingRecordsMax * job.recordBytes),
    ...(job.transactionalId !== undefined
      ? { transactionalId: job.transactionalId }
      : { idempotent: true }),
  });
}

/** Idempotent producer: sends as fast as the window allows for durationS, then waits for every acknowledgement. */
async function produceIdempotent(
  job: ProduceJob,
  producer: Producer,
  value: Buffer,
): Promise<ProduceResult> {
  const pending = new Pending(job.pendingRecordsMax);
  let records = 0;
  let failed = 0;
  let firstError: unknown;
  const startMs = performance.now();
  const endMs = startMs + job.durationS * 1000;
  for (let sent = 1; performance.now() < endMs; sent++) {
    if (!(await pending.waitBelow(pending.max, DRAIN_TIMEOUT_MS)))
      throw new Error("no acknowledgement within the drain bound");
    pending.track(
      producer.send({ topic: job.topic, value }),
      () => (records += 1),
      (e) => {
        failed += 1;
        firstError ??= e;
      },
    );
    if (sent % YIELD_EVERY_RECORDS === 0) await yieldTurn();
  }
  if (!(await pending.waitBelow(1, DRAIN_TIMEOUT_MS)))
    throw new Error(`${pending.count} records unacknowledged after ${DRAIN_TIMEOUT_MS} ms`);
  const elapsedS = (performance.now() - startMs) / 1000;
  if (firstError) log(`${failed} sends failed, first: ${String(firstError)}`);
  return {
    kind: "produce",
    records,
    bytes: records * job.recordBytes,
    warmupRecords: 1,
    elapsedS,
    failedRecords: failed,
    commits: 0,
    aborts: 0,
    commitLatenciesMs: [],
  };
}

/** Transactional producer: the same send loop, with a commit every commitIntervalMs. */
async function produceTransactional(
  job: ProduceJob,
  producer: Producer,
  value: Buffer,
): Promise<ProduceResult> {
  const pending = new Pending(job.pendingRecordsMax);
  const commitLatenciesMs: number[] = [];
  let records = 0;
  let failed = 0;
  let commits = 0;
  let aborts = 0;
  let abortsInARow = 0;
  const startMs = performance.now();
  const endMs = startMs + job.durationS * 1000;
  while (performance.now() < endMs) {
    producer.beginTransaction();
    let sendFailures = 0;
    let firstSendError: unknown;
    const txnEndMs = Math.min(endMs, performance.now() + job.commitIntervalMs);
    let sent = 0;
    while (performance.now() < txnEndMs) {
      if (!(await pending.waitBelow(pending.max, DRAIN_TIMEOUT_MS)))
        throw new Error("no acknowledgement within the drain bound");
      pending.track(
        producer.send({ topic: job.topic, value }),
        () => undefined,
        (e) => {
          sendFailures += 1;
          firstSendError ??= e;
        },
      );
      sent += 1;
      if (sent % YIELD_EVERY_RECORDS === 0) await yieldTurn();
    }
    let commitStartMs: number;
    try {
      // The commit latency is the transaction protocol's (EndTxn, markers), not the wait for this
      // transaction's data to be acknowledged, which the idempotent case pays as well.
      await producer.flush();
      commitStartMs = performance.now();
      await producer.commitTransaction();
      commitLatenciesMs.push(performance.now() - commitStartMs);
      // A committed transaction must have every record acknowledged; otherwise it is a client bug.
      if (sendFailures > 0)
        log(
          `WARNING: commit succeeded although ${sendFailures} sends of the transaction failed, first: ${String(firstSendError)}`,
        );
      records += sent;
      commits += 1;
      abortsInARow = 0;
    } catch (e) {
      log(`commit failed (${String(e)}); aborting the transaction`);
      await producer.abortTransaction();
      failed += sent;
      aborts += 1;
      abortsInARow += 1;
      if (abortsInARow >= ABORTS_IN_A_ROW_MAX)
        throw new Error(`${abortsInARow} transactions in a row failed, last: ${String(e)}`, {
          cause: e,
        });
    }
  }
  const elapsedS = (performance.now() - startMs) / 1000;
  return {
    kind: "produce",
    records,
    bytes: records * job.recordBytes,
    warmupRecords: 1,
    elapsedS,
    failedRecords: failed,
    commits,
    aborts,
    commitLatenciesMs,
  };
}

/** Metadata, producer id (and for transactions the coordinator) before the clock starts: one committed record on partition 0. */
async function warmUp(job: ProduceJob, producer: Producer, value: Buffer): Promise<void> {
  if (job.transactionalId === undefined) {
    await producer.send({ topic: job.topic, value, partition: 0 });
    return;
  }
  await producer.initTransactions();
  producer.beginTransaction();
  await producer.send({ topic: job.topic, value, partition: 0 });
  await producer.commitTransaction();
}

async function produce(job: ProduceJob): Promise<ProduceResult> {
  const producer = newProducer(job);
  const value = Buffer.alloc(job.recordBytes, 120);
  try {
    await warmUp(job, producer, value);
    return job.transactionalId !== undefined
      ? await produceTransactional(job, producer, value)
      : await produceIdempotent(job, producer, value);
  } finally {
    await producer.close({ timeoutMs: CLOSE_TIMEOUT_MS });
  }
}

/** One transaction of one record per partition every 1/transactionsPerS s (none overlap). */
async function producePaced(job: PacedJob): Promise<PacedResult> {
  const producer = new Producer({
    bootstrap: job.bootstrap,
    acks: -1,
    lingerMs: 0,
    transactionalId: job.transactionalId,
  });
  const value = Buffer.alloc(job.recordBytes, 120);
  const latenciesMs: number[] = [];
  let aborts = 0;
  let abortsInARow = 0;
  try {
    await producer.initTransactions();
    const startMs = performance.now();
    const endMs = startMs + job.durationS * 1000;
    const slotMs = 1000 / job.transactionsPerS;
    for (let n = 0; performance.now() < endMs; n++) {
      const waitMs = startMs + n * slotMs - performance.now();
      if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
      const beganMs = performance.now();
      producer.beginTransaction();
      try {
        const sends = [];
        for (let partition = 0; partition < job.partitions; partition++)
          sends.push(producer.send({ topic: job.topic, partition, value }));
        await Promise.all(sends);
        await producer.commitTransaction();
        latenciesMs.push(performance.now() - beganMs);
        abortsInARow = 0;
      } catch (e) {
        log(`paced transaction failed (${String(e)}); aborting it`);
        await producer.abortTransaction();
        aborts += 1;
        abortsInARow += 1;
        if (abortsInARow >= ABORTS_IN_A_ROW_MAX)
          throw new Error(`${abortsInARow} paced transactions in a row failed`, { cause: e });
      }
    }
    return {
      kind: "paced",
      commits: latenciesMs.length,
      aborts,
      elapsedS: (performance.now() - startMs) / 1000,
      transactionLatenciesMs: latenciesMs,
    };
  } finally {
    await producer.close({ timeoutMs: CLOSE_TIMEOUT_MS });
  }
}

/** Reads the topic from offset 0 up to the end offsets under the job's isolation level, timing it. */
async function fetchAll(job: FetchJob): Promise<FetchResult> {
  const consumer = new Consumer({
    bootstrap: job.bootstrap,
    isolationLevel: job.isolation,
    fetchMaxWaitMs: POLL_TIMEOUT_MS,
    partitionMaxBytes: job.partitionMaxBytes,
  });
  try {
    const tps: TopicPartition[] = Array.from({ length: job.partitions }, (_, partition) => ({
      topic: job.topic,
      partition,
    }));
    consumer.assign(tps);
    const ends = await consumer.endOffsets(tps);
    for (const tp of tps) consumer.seek(tp, 0n);
    let records = 0;
    let bytes = 0;
    let complete = false;
    const startMs = performance.now();
    const deadlineMs = startMs + job.timeoutS * 1000;
    let lastRecordMs = startMs;
    while (performance.now() < deadlineMs && performance.now() - lastRecordMs < FETCH_IDLE_MS_MAX) {
      const batch = await consumer.poll({
        maxPollRecords: POLL_RECORDS_MAX,
        timeoutMs: POLL_TIMEOUT_MS,
      });
      if (batch.length > 0) lastRecordMs = performance.now();
      records += batch.length;
      for (const r of batch) bytes += r.value?.length ?? 0;
      complete = await reachedEnds(consumer, ends);
      if (complete) break;
    }
    const endOffsetSum = ends.reduce((sum, e) => sum + e.offset, 0n).toString();
    return {
      kind: "fetch",
      records,
      bytes,
      elapsedS: (lastRecordMs - startMs) / 1000,
      endOffsetSum,
      complete,
    };
  } finally {
    await consumer.close();
  }
}

async function reachedEnds(
  consumer: Consumer,
  ends: ReadonlyArray<TopicPartition & { offset: bigint }>,
): Promise<boolean> {
  for (const e of ends) if ((await consumer.position(e)) < e.offset) return false;
  return true;
}

/** Runs the jobs that arrive one JSON line at a time on stdin, one after the other; answers each with one line. */
async function serve(): Promise<void> {
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (line.trim() === "") continue;
    let answer: WorkerAnswer;
    try {
      const job = JSON.parse(line) as Job;
      if (job.kind !== "produce" && job.kind !== "fetch" && job.kind !== "paced")
        throw new Error(`unknown job kind ${String((job as { kind?: unknown }).kind)}`);
      answer = {
        ok: true,
        result:
          job.kind === "produce"
            ? await produce(job)
            : job.kind === "paced"
              ? await producePaced(job)
              : await fetchAll(job),
      };
    } catch (e) {
      log(`job failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
      answer = { ok: false, error: e instanceof Error ? e.message : String(e) };
    }
    process.stdout.write(`${JSON.stringify(answer)}\n`);
  }
}

await serve();
process.exit(0);

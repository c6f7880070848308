// The bounded transactional workload of `tern verify`, recorded as a History for the checker:
// - producers (Jepsen's queue): each transaction is 1-4 sends of unique values to random
//   partitions and read_committed polls from the producer's own positions, which advance only
//   when the transaction commits; ~10% abort by choice;
// - copiers (consume-transform-produce): one per input partition, reading from its position,
//   writing `v:copied` to the same output partition and committing the input offset with the
//   output in one transaction; after an abort or an unknown outcome it resumes from the
//   group's committed offset;
// - readers: read_committed pollers of every partition whose polls must never go backwards
//   or show an aborted, uncommitted or half a transaction.
// After the duration the producers stop, the copiers drain their input, every transactional
// id is fenced (settling unknown outcomes), and every partition is read from 0.
import { SeededRandom, type Random } from "../common/prng.js";
import type { PolledRecord, TxnProducer, VerifyDriver } from "./driver.js";
import type { History, MicroOp, OffsetCommitRecord, SendOp, TxnOp } from "./history.js";

const OPS_PER_TXN_MAX = 4;
const POLL_RECORDS_MAX = 16;
const COPY_RECORDS_MAX = 8;
const PRODUCERS = 4;
const READERS = 2;
const ABORT_RATIO = 0.1;
/** One operation (a send, a commit, an init) that takes longer counts as failed or unknown. */
const OP_TIMEOUT_MS = 30_000;
const POLL_WAIT_MS = 100;
const RETRY_BACKOFF_MS = 250;
/** A drained copier or the final read: this long without a new record after reaching its target. */
const IDLE_DONE_MS = 1_500;

export interface WorkloadSettings {
  /** Prefix of every topic, transactional id and group of the run (unique per run). */
  readonly runId: string;
  readonly topics: number;
  readonly partitions: number;
  readonly durationMs: number;
  /** Producer transactions per second, over all producers. */
  readonly rate: number;
  /** Bound on draining, fencing and the final read after the duration. */
  readonly settleTimeoutMs: number;
  readonly seed: number;
  readonly onProgress?: (phase: string, fraction: number) => void;
}

export interface WorkloadResult {
  readonly history: History;
  readonly topics: string[];
  readonly transactionalIds: string[];
  /** Copier partitions whose input was not all copied before the settle deadline. */
  readonly undrained: string[];
  /** Transactional ids that no new instance could fence before the deadline. */
  readonly unfenced: string[];
  /** Keys whose final read never reached every acknowledged committed write. */
  readonly incompleteReads: string[];
  readonly errors: Record<string, number>;
}

interface Key {
  readonly topic: string;
  readonly partition: number;
}

const keyName = (k: Key): string => `${k.topic}/${k.partition}`;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function bounded<T>(what: string, p: Promise<T>, ms = OP_TIMEOUT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** Spaces the producers' transactions `1000 / rate` ms apart, over all producers. */
class Pacer {
  private nextMs = Date.now();
  constructor(private readonly rate: number) {}
  async slot(): Promise<void> {
    const at = Math.max(this.nextMs, Date.now());
    this.nextMs = at + 1000 / this.rate;
    if (at > Date.now()) await sleep(at - Date.now());
  }
}

/** A transactional id's current instance, replaced after an unknown outcome or a fatal error. */
class Session {
  private producer: TxnProducer | undefined;
  constructor(
    private readonly run: Run,
    readonly transactionalId: string,
  ) {}

  async get(): Promise<TxnProducer | undefined> {
    if (this.producer) return this.producer;
    try {
      this.producer = await bounded(
        `init ${this.transactionalId}`,
        this.run.driver.txnProducer(this.transactionalId),
      );
      return this.producer;
    } catch (e) {
      this.run.countError(e);
      await sleep(RETRY_BACKOFF_MS);
      return undefined;
    }
  }

  /** Drops the instance: the next get() starts a new one, which fences this one. */
  discard(): void {
    const old = this.producer;
    this.producer = undefined;
    void old?.close().catch(() => undefined);
  }

  async close(): Promise<void> {
    await this.producer?.close().catch(() => undefined);
    this.producer = undefined;
  }
}

class Run {
  readonly txns: TxnOp[] = [];
  readonly errors: Record<string, number> = {};
  readonly startMs = Date.now();
  /** Highest acknowledged offset per key of a committed transaction: what the final read must reach. */
  readonly targets = new Map<string, number>();
  producing = true;

  constructor(
    readonly driver: VerifyDriver,
    readonly s: WorkloadSettings,
  ) {}

  nowMs(): number {
    return Date.now() - this.startMs;
  }

  countError(e: unknown): void {
    const err = e as { code?: unknown; errorName?: unknown; type?: unknown; message?: unknown };
    const name = [err.code, err.errorName, err.type].find((x) => typeof x === "string" && x !== "");
    const key = (name as string | undefined) ?? String(err.message ?? e).slice(0, 60);
    this.errors[key] = (this.errors[key] ?? 0) + 1;
    if (process.env.TERN_VERIFY_DEBUG === "1")
      process.stderr.write(`verify: ${String(err.message ?? e)}\n`);
  }

  record(txn: TxnOp): void {
    this.txns.push(txn);
    if (txn.outcome !== "ok") return;
    for (const op of txn.ops)
      if (op.f === "send" && op.offset !== undefined)
        this.targets.set(op.key, Math.max(this.targets.get(op.key) ?? -1, op.offset));
  }

  /**
   * One transaction: ok when the commit was acknowledged, fail when an abort was (by choice or
   * after an error), unknown otherwise (the session is replaced; the final read settles it).
   */
  async transaction(
    session: Session,
    process: number,
    abortByChoice: boolean,
    body: (p: TxnProducer, ops: MicroOp[]) => Promise<void>,
  ): Promise<TxnOp | undefined> {
    const producer = await session.get();
    if (!producer) return undefined;
    const ops: MicroOp[] = [];
    const invokedMs = this.nowMs();
    let outcome: TxnOp["outcome"];
    let bodyDone = false;
    try {
      await bounded("begin", producer.begin());
      await body(producer, ops);
      bodyDone = true;
      // An error here leaves the outcome unknown: the end may have taken effect.
      await bounded("end", abortByChoice ? producer.abort() : producer.commit());
      outcome = abortByChoice ? "fail" : "ok";
    } catch (e) {
      this.countError(e);
      outcome = "unknown";
      if (!bodyDone) {
        try {
          await bounded("abort", producer.abort());
          outcome = "fail";
        } catch (e2) {
          this.countError(e2);
        }
      }
    }
    if (outcome === "unknown") session.discard();
    const txn: TxnOp = {
      id: this.txns.length,
      process,
      ops,
      outcome,
      abortedByChoice: abortByChoice || undefined,
      invokedMs,
      completedMs: this.nowMs(),
    };
    this.record(txn);
    return txn;
  }
}

function groupReads(records: readonly PolledRecord[]): Record<string, Array<[number, string]>> {
  const reads: Record<string, Array<[number, string]>> = {};
  for (const r of records) (reads[`${r.topic}/${r.partition}`] ??= []).push([r.offset, r.value]);
  return reads;
}

async function producerLoop(
  run: Run,
  process: number,
  rng: Random,
  pacer: Pacer,
  inputs: readonly Key[],
): Promise<string> {
  const session = new Session(run, `${run.s.runId}-producer-${process}`);
  const poller = await bounded("poller", run.driver.poller(inputs));
  /** Positions as of the last commit: where the poller goes back to after anything else. */
  const committedPositions = new Map<string, number>();
  let written = 0;
  try {
    while (run.producing) {
      await pacer.slot();
      if (!run.producing) break;
      const plan = Array.from({ length: rng.int(1, OPS_PER_TXN_MAX + 1) }, () => ({
        send: rng.bool(0.6),
        key: inputs[rng.int(0, inputs.length)]!,
      }));
      const polled = new Map<string, number>();
      const txn = await run.transaction(session, process, rng.bool(ABORT_RATIO), async (p, ops) => {
        for (const step of plan) {
          if (step.send) {
            const value = `${run.s.runId}-p${process}-${written++}`;
            // Recorded before the answer: a send whose answer is lost still belongs to the txn.
            const op: { f: "send"; key: string; value: string; offset?: number } = {
              f: "send",
              key: keyName(step.key),
              value,
            };
            ops.push(op as SendOp);
            const [offset] = await bounded(
              "send",
              p.send(step.key.topic, step.key.partition, [value]),
            );
            op.offset = offset;
          } else {
            const records = await bounded("poll", poller.poll(POLL_RECORDS_MAX, POLL_WAIT_MS));
            ops.push({ f: "poll", reads: groupReads(records) });
            for (const r of records) polled.set(`${r.topic}/${r.partition}`, r.offset + 1);
          }
        }
      });
      if (txn?.outcome === "ok") for (const [k, v] of polled) committedPositions.set(k, v);
      else
        for (const k of inputs) {
          const name = keyName(k);
          if (polled.has(name))
            poller.seek(k.topic, k.partition, committedPositions.get(name) ?? 0);
        }
    }
  } finally {
    await session.close();
    await poller.close().catch(() => undefined);
  }
  return session.transactionalId;
}

async function copierLoop(
  run: Run,
  process: number,
  rng: Random,
  input: Key,
  output: Key,
  groupId: string,
  deadlineMs: () => number,
): Promise<{ transactionalId: string; drained: boolean }> {
  const session = new Session(run, `${run.s.runId}-copier-${process}`);
  const poller = await bounded("poller", run.driver.poller([input]));
  let idleSinceMs: number | undefined;
  let position = 0;
  const resume = async (): Promise<void> => {
    try {
      position =
        (await bounded(
          "committed offset",
          run.driver.committedOffset(groupId, input.topic, input.partition),
        )) ?? 0;
    } catch (e) {
      run.countError(e);
    }
    poller.seek(input.topic, input.partition, position);
  };
  try {
    await resume();
    while (Date.now() < deadlineMs()) {
      const target = run.targets.get(keyName(input)) ?? -1;
      const records = await bounded("poll", poller.poll(COPY_RECORDS_MAX, POLL_WAIT_MS)).catch(
        (e) => {
          run.countError(e);
          return [] as PolledRecord[];
        },
      );
      if (records.length === 0) {
        if (run.producing || position <= target) continue;
        idleSinceMs ??= Date.now();
        if (Date.now() - idleSinceMs >= IDLE_DONE_MS)
          return { transactionalId: session.transactionalId, drained: true };
        continue;
      }
      idleSinceMs = undefined;
      const last = records[records.length - 1]!.offset;
      const values = records.map((r) => `${r.value}:copied`);
      const txn = await run.transaction(
        session,
        process,
        run.producing && rng.bool(ABORT_RATIO),
        async (p, ops) => {
          ops.push({ f: "poll", reads: groupReads(records) });
          const sends = values.map((value) => ({
            f: "send" as const,
            key: keyName(output),
            value,
            offset: undefined as number | undefined,
          }));
          ops.push(...sends);
          const offsets = await bounded("send", p.send(output.topic, output.partition, values));
          sends.forEach((s, i) => (s.offset = offsets[i]));
          await bounded(
            "send offsets",
            p.sendOffsets(groupId, input.topic, input.partition, last + 1),
          );
        },
      );
      if (txn?.outcome === "ok") position = last + 1;
      else await resume();
    }
    return { transactionalId: session.transactionalId, drained: false };
  } finally {
    await session.close();
    await poller.close().catch(() => undefined);
  }
}

async function readerLoop(run: Run, process: number, keys: readonly Key[], stop: () => boolean) {
  const poller = await bounded("poller", run.driver.poller(keys));
  try {
    while (!stop()) {
      const invokedMs = run.nowMs();
      const records = await bounded("poll", poller.poll(POLL_RECORDS_MAX * 4, 200)).catch((e) => {
        run.countError(e);
        return [] as PolledRecord[];
      });
      if (records.length === 0) continue;
      run.record({
        id: run.txns.length,
        process,
        ops: [{ f: "poll", reads: groupReads(records) }],
        outcome: "ok",
        invokedMs,
        completedMs: run.nowMs(),
      });
    }
  } finally {
    await poller.close().catch(() => undefined);
  }
}

/** A new instance of every id: completes or aborts whatever an old one left open. */
async function fenceAll(run: Run, ids: readonly string[], deadlineMs: number): Promise<string[]> {
  const unfenced: string[] = [];
  await Promise.all(
    ids.map(async (id) => {
      while (Date.now() < deadlineMs) {
        try {
          const p = await bounded(`fence ${id}`, run.driver.txnProducer(id));
          await p.close().catch(() => undefined);
          return;
        } catch (e) {
          run.countError(e);
          await sleep(RETRY_BACKOFF_MS);
        }
      }
      unfenced.push(id);
    }),
  );
  return unfenced;
}

/** Every key from offset 0, until it reached its target and then nothing new came for a while. */
async function finalRead(
  run: Run,
  keys: readonly Key[],
  deadlineMs: number,
): Promise<{ reads: Record<string, Array<[number, string]>>; incomplete: string[] }> {
  const reads: Record<string, Array<[number, string]>> = {};
  for (const k of keys) reads[keyName(k)] = [];
  const poller = await bounded("poller", run.driver.poller(keys));
  try {
    let lastNewMs = Date.now();
    const reached = (): boolean =>
      keys.every((k) => {
        const pairs = reads[keyName(k)]!;
        return (pairs[pairs.length - 1]?.[0] ?? -1) >= (run.targets.get(keyName(k)) ?? -1);
      });
    while (Date.now() < deadlineMs) {
      const records = await bounded("poll", poller.poll(1_000, 200)).catch((e) => {
        run.countError(e);
        return [] as PolledRecord[];
      });
      for (const r of records) reads[`${r.topic}/${r.partition}`]!.push([r.offset, r.value]);
      if (records.length > 0) lastNewMs = Date.now();
      else if (reached() && Date.now() - lastNewMs >= IDLE_DONE_MS) break;
    }
  } finally {
    await poller.close().catch(() => undefined);
  }
  const incomplete = keys
    .filter((k) => {
      const pairs = reads[keyName(k)]!;
      return (pairs[pairs.length - 1]?.[0] ?? -1) < (run.targets.get(keyName(k)) ?? -1);
    })
    .map(keyName);
  return { reads, incomplete };
}

export async function runWorkload(
  driver: VerifyDriver,
  s: WorkloadSettings,
): Promise<WorkloadResult> {
  const run = new Run(driver, s);
  const progress = s.onProgress ?? ((): void => undefined);
  const rng = new SeededRandom(s.seed);
  const inTopics = Array.from({ length: s.topics }, (_, i) => `${s.runId}-in-${i}`);
  const outTopics = Array.from({ length: s.topics }, (_, i) => `${s.runId}-out-${i}`);
  const allTopics = [...inTopics, ...outTopics];
  const partitionsOf = (topic: string): Key[] =>
    Array.from({ length: s.partitions }, (_, partition) => ({ topic, partition }));
  const inputs = inTopics.flatMap(partitionsOf);
  const outputs = outTopics.flatMap(partitionsOf);
  const groupId = `${s.runId}-copiers`;

  progress("creating topics", 0);
  await bounded(
    "create topics",
    driver.createTopics(allTopics.map((name) => ({ name, partitions: s.partitions }))),
    60_000,
  );
  const startedMs = Date.now();
  const settleDeadlineMs = (): number => startedMs + s.durationMs + s.settleTimeoutMs;
  let readersStop = false;
  const ticker = setInterval(
    () =>
      progress(
        run.producing ? "running" : "draining",
        Math.min(1, (Date.now() - startedMs) / (s.durationMs + 1)),
      ),
    250,
  );
  const pacer = new Pacer(s.rate);
  try {
    const producers = Array.from({ length: PRODUCERS }, (_, p) =>
      producerLoop(run, p, rng.fork(), pacer, inputs),
    );
    const copiers = inputs.map((input, i) =>
      copierLoop(run, 100 + i, rng.fork(), input, outputs[i]!, groupId, settleDeadlineMs),
    );
    const readers = Array.from({ length: READERS }, (_, r) =>
      readerLoop(run, 1_000 + r, [...inputs, ...outputs], () => readersStop),
    );
    await sleep(s.durationMs);
    run.producing = false;
    const producerIds = await Promise.all(producers);
    const copied = await Promise.all(copiers);
    readersStop = true;
    await Promise.all(readers);
    clearInterval(ticker);
    progress("settling", 1);
    const ids = [...producerIds, ...copied.map((c) => c.transactionalId)];
    const unfenced = await fenceAll(run, ids, settleDeadlineMs());
    const { reads, incomplete } = await finalRead(
      run,
      [...inputs, ...outputs],
      Math.max(settleDeadlineMs(), Date.now() + 10_000),
    );
    const offsetCommits: OffsetCommitRecord[] = [];
    for (const input of inputs) {
      const pairs = reads[keyName(input)]!;
      const last = pairs[pairs.length - 1]?.[0];
      if (last === undefined) continue;
      const committed = await bounded(
        "committed offset",
        driver.committedOffset(groupId, input.topic, input.partition),
      ).catch((e) => {
        run.countError(e);
        return undefined;
      });
      offsetCommits.push({
        process: 100 + inputs.indexOf(input),
        key: keyName(input),
        lastPolledOffset: last,
        committedOffset: committed ?? -1,
      });
    }
    const history: History = {
      txns: run.txns,
      finalReads: reads,
      offsetCommits,
      valuesMayRepeat: true,
      copier: {
        inputValues: inputs.flatMap((k) => reads[keyName(k)]!.map(([, v]) => v)),
        outputKeyPrefix: `${s.runId}-out-`,
        transform: "suffix-copied",
      },
    };
    return {
      history,
      topics: allTopics,
      transactionalIds: ids,
      undrained: copied.flatMap((c, i) => (c.drained ? [] : [keyName(inputs[i]!)])),
      unfenced,
      incompleteReads: incomplete,
      errors: run.errors,
    };
  } finally {
    clearInterval(ticker);
    run.producing = false;
    readersStop = true;
  }
}

// Workload (d), the subscribed copier group: three real copier processes (the demo's
// scripts/demo/copier.js --subscribe, the exactly-once consume-transform-produce app) form one
// KIP-848 consumer group over a 6-partition input topic, while a feeder in the runner keeps
// committing input records (transactions of a few records per partition) for as long as the run
// lasts. Each copier prints its history (--history: what every transaction polled, its outcome,
// the offsets it wrote, its assignment changes), which becomes the run's TxnOps: a transaction
// begun by a process that died before it ended is unknown (settled by the final read). A fault
// can SIGKILL a member and restart it, or SIGSTOP it past the session timeout and SIGCONT it (a
// zombie: fenced, its commits refused) (MemberControl); its partitions move to the others after
// the session timeout. When the feeder has stopped, the copiers run until the group's committed
// offsets reach the end of the input, then they are stopped with SIGTERM (they leave the group).
// With client "librdkafka" (workload "kafka-copier") the members are kafka-group-copier.py
// processes instead: the same loop on confluent-kafka through the brokers' Kafka listeners, a
// classic consumer group, printing the same history; with "kafkajs" (workload
// "kafkajs-copier") kafkajs-group-copier.ts, the same loop on kafkajs.
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { distRoot } from "../../../scripts/cluster/process-control.js";
import type { CopierHistoryEvent } from "../../../scripts/demo/copier.js";
import { transform } from "../../../scripts/demo/transform.js";
import type { MicroOp, SendOp, TxnOp } from "../../../libs/verify/history.js";
import { pollUntil, sleep } from "./cluster-clients.js";
import { readStable } from "./settle.js";
import { countError, ensureInit, runOneTxn, type TxnLoopStats } from "./txn-loop.js";
import { TxnSession } from "./txn-session.js";
import type { WorkloadOptions, WorkloadResult } from "./workload.js";

const FEED_PER_PARTITION = 4;
const FEED_INTERVAL_MS = 250;
const FEED_PROCESS = 500;
const MAX_POLL_RECORDS = 20;
/** Below the coordinator's 60 s: a dead copier's open transaction aborts in bounded time. */
const COPIER_TXN_TIMEOUT_MS = 20_000;
const RESTARTS_MAX = 20;
const RESTART_DELAY_MS = 500;
const STOP_WAIT_MS = 30_000;
const OFFSETS_POLL_MS = 500;
const STDERR_TAIL_CHARS = 4_000;
const LINE_CHARS_MAX = 1_000_000;
/** Debian's Python, where python3-confluent-kafka is installed (.ci/run). */
const PYTHON = "/usr/bin/python3";
const LIBRDKAFKA_COPIER = join(
  process.cwd(),
  "test",
  "chaos",
  "workloads",
  "kafka-group-copier.py",
);

export interface GroupCopierOptions extends WorkloadOptions {
  readonly bootstrap: string;
  /** "tern": the demo's copier over gRPC; "librdkafka" / "kafkajs": the Kafka-protocol copiers on kafkaBootstrap. */
  readonly client: "tern" | "librdkafka" | "kafkajs";
  /** The brokers' Kafka listeners (host:port,...), for the Kafka-protocol members. */
  readonly kafkaBootstrap?: string;
  readonly inTopic: string;
  readonly outTopic: string;
  readonly partitions: number;
  readonly members: number;
  readonly groupId: string;
  /** Copiers are stopped at this monotonic ms even when input is left (the checker then finds it). */
  readonly hardStopMs: () => number;
  readonly log: (line: string) => void;
  /** The kafkajs members' producer: its request timeout and produce retries (scenario's choice; else kafkajs-group-copier.ts's). */
  readonly kafkajsProducer?: KafkajsProducerOptions;
}

/** A kafkajs copier's producer settings, passed in its environment (kafkajs-group-copier.ts reads them). */
export interface KafkajsProducerOptions {
  readonly requestTimeoutMs: number;
  readonly retries: number;
}

/** What a fault may do to the group's members. */
export interface MemberControl {
  readonly count: number;
  /** Sends the signal and waits (bounded) for the process to exit; answers the input partitions it owned. */
  kill(member: number, signal: "SIGKILL" | "SIGTERM"): Promise<{ owned: number[] }>;
  /** Starts the member again (a new process with the same transactional id); no-op once the workload is stopping. */
  restart(member: number): void;
  /**
   * SIGSTOP the member's process as it begins its next transaction (it printed what it polled),
   * or after waitMs without one; answers the partitions it owned and whether it struck inside a
   * transaction.
   */
  pauseInTransaction(
    member: number,
    waitMs: number,
  ): Promise<{ owned: number[]; inTransaction: boolean }>;
  resume(member: number): void;
  /** SIGCONT every member (heal). */
  resumeAll(): void;
}

interface Pending {
  readonly invokedMs: number;
  readonly polled: Array<readonly [number, number, string]>;
}

interface Instance {
  readonly child: ChildProcess;
  readonly exited: Promise<void>;
  readonly pending: Map<number, Pending>;
  owned: number[];
  stderr: string;
  /** Killed by a fault or stopped by the workload: its exit is expected. */
  expectedExit: boolean;
}

export class GroupCopierWorkload implements MemberControl {
  readonly count: number;
  private readonly txns: TxnOp[] = [];
  private readonly stats: TxnLoopStats = { errors: {} };
  private readonly instances: Array<Instance | undefined>;
  private readonly restarts: number[];
  private stopping = false;
  /** Members to SIGSTOP as they begin a transaction (pauseInTransaction). */
  private readonly stopOnBegin = new Map<number, () => void>();
  private readonly feederId: string;

  constructor(private readonly o: GroupCopierOptions) {
    this.count = o.members;
    this.instances = Array.from({ length: o.members }, () => undefined);
    this.restarts = Array.from({ length: o.members }, () => 0);
    this.feederId = `${o.tag}-group-copier-feed`;
  }

  transactionalIdOf(member: number): string {
    const kind = { tern: "group-copier", librdkafka: "kafka-copier", kafkajs: "kafkajs-copier" };
    return `${this.o.tag}-${kind[this.o.client]}-${member}`;
  }

  async run(): Promise<WorkloadResult> {
    const feeding = this.feed();
    for (let m = 0; m < this.count; m++) this.start(m);
    try {
      await feeding;
      await this.waitCopied();
    } finally {
      await this.stopAll();
    }
    const keys = [this.o.inTopic, this.o.outTopic].flatMap((topic) =>
      Array.from({ length: this.o.partitions }, (_, partition) => ({ topic, partition })),
    );
    return {
      txns: this.txns,
      transactionalIds: [
        this.feederId,
        ...Array.from({ length: this.count }, (_, m) => this.transactionalIdOf(m)),
      ],
      keys,
      stats: this.stats,
    };
  }

  // --- the feeder: input records, one transaction over every partition at a time -------------

  private async feed(): Promise<void> {
    const session = new TxnSession(this.o.clients, this.feederId, this.o.callTimeoutMs);
    const next = Array.from({ length: this.o.partitions }, () => 0);
    while (this.o.running()) {
      if (!(await ensureInit(session, this.stats))) continue;
      const batches = next.map((n, p) =>
        Array.from({ length: FEED_PER_PARTITION }, (_, j) => `${this.o.tag}-in-${p}-${n + j}`),
      );
      // Values are never reused, whatever the outcome: every input value is unique.
      for (let p = 0; p < next.length; p++) next[p]! += FEED_PER_PARTITION;
      const txn = await runOneTxn({
        session,
        process: FEED_PROCESS,
        nextId: () => this.txns.length,
        clock: this.o.clock,
        abortByChoice: this.o.rng.bool(this.o.abortRatio),
        stats: this.stats,
        body: async (ops: MicroOp[]) => {
          await session.addPartitions(
            batches.map((_, partition) => ({ topic: this.o.inTopic, partition })),
          );
          for (let p = 0; p < batches.length; p++) {
            const sends = batches[p]!.map((value) => ({
              f: "send" as const,
              key: `${this.o.inTopic}/${p}`,
              value,
              offset: undefined as number | undefined,
            }));
            ops.push(...sends);
            const base = await session.send(this.o.inTopic, p, batches[p]!);
            sends.forEach((s, j) => (s.offset = base + j));
          }
        },
      });
      this.txns.push(txn);
      this.o.onTxn?.(txn);
      await sleep(FEED_INTERVAL_MS);
    }
  }

  /** After the feeder stopped: until the group's committed offsets pass the last input record of every partition (bounded by hardStopMs). */
  private async waitCopied(): Promise<void> {
    const remainingMs = (): number => Math.max(1, this.o.hardStopMs() - this.o.clock.nowMs());
    // Fence the feeder (its last transaction, if its outcome is unknown, completes or aborts) and read where the input ends.
    await pollUntil(remainingMs(), OFFSETS_POLL_MS, async () => {
      await new TxnSession(this.o.clients, this.feederId, this.o.callTimeoutMs).init();
      return true;
    });
    const ends: number[] = [];
    for (let p = 0; p < this.o.partitions; p++) {
      const pairs = await readStable(this.o.clients, this.o.inTopic, p, Date.now() + remainingMs());
      ends.push(pairs && pairs.length > 0 ? pairs[pairs.length - 1]![0] + 1 : 0);
    }
    const done = await pollUntil(remainingMs(), OFFSETS_POLL_MS, async () => {
      const r = await this.o.clients.groupCall(this.o.groupId, "OffsetFetch", {
        partitions: ends.map((_, partition) => ({ topic: this.o.inTopic, partition })),
        requireStable: true,
      });
      const at = new Map<number, number>();
      for (const x of r.partitions ?? [])
        if (x.errorCode === "NONE") at.set(Number(x.partition), Number(x.offset));
      return ends.every((end, p) => end === 0 || (at.get(p) ?? -1) >= end) ? true : undefined;
    });
    if (!done)
      this.o.log(`group copier: input not all copied by the hard stop (ends ${ends.join(",")})`);
  }

  // --- the member processes ----------------------------------------------------------------

  private command(member: number): [string, string[]] {
    if (this.o.client !== "tern") {
      if (this.o.kafkaBootstrap === undefined)
        throw new Error(`the ${this.o.client} copier needs the brokers' Kafka listeners`);
      const args = [
        this.o.kafkaBootstrap,
        this.o.groupId,
        this.o.inTopic,
        this.o.outTopic,
        this.transactionalIdOf(member),
        String(COPIER_TXN_TIMEOUT_MS),
      ];
      return this.o.client === "librdkafka"
        ? [PYTHON, [LIBRDKAFKA_COPIER, ...args]]
        : [
            process.execPath,
            [join(distRoot(), "test", "chaos", "workloads", "kafkajs-group-copier.js"), ...args],
          ];
    }
    return [
      process.execPath,
      [
        join(distRoot(), "scripts", "demo", "copier.js"),
        "--bootstrap",
        this.o.bootstrap,
        "--input",
        this.o.inTopic,
        "--output",
        this.o.outTopic,
        "--group",
        this.o.groupId,
        "--transactional-id",
        this.transactionalIdOf(member),
        "--subscribe",
        "--history",
        "--max-poll-records",
        String(MAX_POLL_RECORDS),
        "--transaction-timeout-ms",
        String(COPIER_TXN_TIMEOUT_MS),
      ],
    ];
  }

  private start(member: number): void {
    const [command, args] = this.command(member);
    const child = spawn(command, args, {
      stdio: ["ignore", "pipe", "pipe"],
      env: {
        ...process.env,
        TERN_LOG_LEVEL: "warn",
        ...(this.o.kafkajsProducer
          ? {
              CHAOS_KAFKAJS_PRODUCER_REQUEST_TIMEOUT_MS: String(
                this.o.kafkajsProducer.requestTimeoutMs,
              ),
              CHAOS_KAFKAJS_PRODUCER_RETRIES: String(this.o.kafkajsProducer.retries),
            }
          : {}),
      },
    });
    const instance: Instance = {
      child,
      pending: new Map(),
      owned: [],
      stderr: "",
      expectedExit: false,
      exited: new Promise<void>((resolve) =>
        child.once("exit", (code, signal) => {
          this.exited(member, instance, code, signal);
          resolve();
        }),
      ),
    };
    this.instances[member] = instance;
    let partial = "";
    child.stdout!.on("data", (d: Buffer) => {
      const lines = (partial + d.toString()).split("\n");
      partial = lines.pop()!.slice(-LINE_CHARS_MAX);
      for (const line of lines) if (line.startsWith("{")) this.onLine(member, instance, line);
    });
    child.stderr!.on(
      "data",
      (d: Buffer) => (instance.stderr = (instance.stderr + d.toString()).slice(-STDERR_TAIL_CHARS)),
    );
  }

  private onLine(member: number, instance: Instance, line: string): void {
    let e: CopierHistoryEvent | { transactions: number };
    try {
      e = JSON.parse(line) as CopierHistoryEvent | { transactions: number };
    } catch {
      countError(this.stats, new Error("copier: unparsable history line"));
      return;
    }
    if (!("event" in e)) return; // the final result line
    if (e.event === "owned") instance.owned = e.partitions;
    else if (e.event === "begin") {
      instance.pending.set(e.txn, {
        invokedMs: this.o.clock.nowMs(),
        polled: e.polled.map(([p, offset, value]) => [p, Number(offset), value] as const),
      });
      this.stopOnBegin.get(member)?.();
    } else {
      const pending = instance.pending.get(e.txn);
      instance.pending.delete(e.txn);
      if (!pending) return;
      if (e.error)
        countError(
          this.stats,
          new Error(`copier: ${e.error.replace(/[0-9a-f-]{36}/g, "…").slice(0, 60)}`),
        );
      this.record(
        member,
        pending,
        e.outcome,
        e.outcome === "ok" ? e.sent.map(([, offset]) => Number(offset)) : [],
      );
    }
  }

  /** One copier transaction as the checker sees it: the poll, then a send per polled record (same partition of the output). */
  private record(
    member: number,
    pending: Pending,
    outcome: TxnOp["outcome"],
    offsets: number[],
  ): void {
    const reads: Record<string, Array<readonly [number, string]>> = {};
    for (const [p, offset, value] of pending.polled)
      (reads[`${this.o.inTopic}/${p}`] ??= []).push([offset, value]);
    const sends: SendOp[] = pending.polled.map(([p, , value], j) => ({
      f: "send",
      key: `${this.o.outTopic}/${p}`,
      value: transform(value),
      ...(offsets[j] !== undefined && offsets[j]! >= 0 ? { offset: offsets[j] } : {}),
    }));
    const txn: TxnOp = {
      id: this.txns.length,
      process: member,
      ops: [{ f: "poll", reads }, ...sends],
      outcome,
      invokedMs: pending.invokedMs,
      completedMs: this.o.clock.nowMs(),
    };
    this.txns.push(txn);
    this.o.onTxn?.(txn);
  }

  private exited(
    member: number,
    instance: Instance,
    code: number | null,
    signal: NodeJS.Signals | null,
  ): void {
    // A transaction begun and never ended: the process died inside it (unknown, settled by the final read).
    for (const pending of instance.pending.values()) this.record(member, pending, "unknown", []);
    instance.pending.clear();
    if (this.instances[member] === instance) this.instances[member] = undefined;
    if (instance.expectedExit) return;
    countError(this.stats, new Error(`copier exited ${code ?? signal}`));
    this.o.log(
      `group copier ${member} exited unexpectedly (${code ?? signal}): ${instance.stderr.slice(-600)}`,
    );
    if (
      !this.stopping &&
      this.restarts[member]! < RESTARTS_MAX &&
      this.o.clock.nowMs() < this.o.hardStopMs()
    ) {
      this.restarts[member]! += 1;
      setTimeout(() => this.restart(member), RESTART_DELAY_MS);
    }
  }

  async kill(member: number, signal: "SIGKILL" | "SIGTERM"): Promise<{ owned: number[] }> {
    const instance = this.instances[member];
    if (!instance) throw new Error(`copier ${member} is not running`);
    instance.expectedExit = true;
    const owned = [...instance.owned];
    instance.child.kill(signal);
    await Promise.race([instance.exited, sleep(STOP_WAIT_MS)]);
    return { owned };
  }

  async pauseInTransaction(
    member: number,
    waitMs: number,
  ): Promise<{ owned: number[]; inTransaction: boolean }> {
    const instance = this.instances[member];
    if (!instance) throw new Error(`copier ${member} is not running`);
    const inTransaction = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => done(false), waitMs);
      const done = (struck: boolean): void => {
        clearTimeout(timer);
        this.stopOnBegin.delete(member);
        instance.child.kill("SIGSTOP");
        resolve(struck);
      };
      // Synchronously from the stdout handler: the copier is between its poll and its commit.
      this.stopOnBegin.set(member, () => done(true));
    });
    return { owned: [...instance.owned], inTransaction };
  }

  resume(member: number): void {
    this.instances[member]?.child.kill("SIGCONT");
  }

  resumeAll(): void {
    for (const i of this.instances) i?.child.kill("SIGCONT");
  }

  restart(member: number): void {
    if (this.stopping || this.instances[member] !== undefined) return;
    this.start(member);
  }

  private async stopAll(): Promise<void> {
    this.stopping = true;
    this.resumeAll();
    const running = this.instances.filter((i): i is Instance => i !== undefined);
    for (const i of running) {
      i.expectedExit = true;
      i.child.kill("SIGTERM");
    }
    const all = Promise.all(running.map((i) => i.exited));
    if (
      (await Promise.race([all.then(() => true), sleep(STOP_WAIT_MS).then(() => false)])) === false
    ) {
      for (const i of running) i.child.kill("SIGKILL");
      await Promise.race([all, sleep(STOP_WAIT_MS)]);
    }
  }
}

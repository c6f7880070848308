// One chaos run on a live cluster: create the run's topics, draw the workload and the fault
// schedule from the seed, run both, heal, settle unknown outcomes (fence every transactional id,
// read everything read_committed), check the history, and build the report.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { SeededRandom } from "../../libs/common/prng.js";
import { loadTernProto } from "../../libs/common/proto.js";
import { checkHistory } from "../../libs/verify/checker.js";
import type { History, TxnOp } from "../../libs/verify/history.js";
import type { ChaosCluster } from "./cluster/chaos-cluster.js";
import { FaultExecutor } from "./faults/executor.js";
import { ZOMBIE_TOPIC_PARTITIONS } from "./faults/zombie.js";
import type { FaultEvent, FaultStep } from "./faults/fault-types.js";
import { LateRequests } from "./faults/late-requests.js";
import { NetworkPartitioner } from "./faults/network-partition.js";
import { buildReport, type ChaosReport } from "./report.js";
import { scenarioNamed, type WorkloadKind } from "./scenarios/scenarios.js";
import { ClusterClients, createTopicsAndWait } from "./workloads/cluster-clients.js";
import { SMALL_SEGMENT_CONFIG } from "./faults/corrupt-segment.js";
import { runCopierWorkload, seedCopierInput } from "./workloads/copier.js";
import { GroupCopierWorkload } from "./workloads/group-copier.js";
import { balances, BALANCE_INITIAL, runMoneyWorkload } from "./workloads/money.js";
import { runQueueWorkload } from "./workloads/queue.js";
import type { WorkloadResult } from "./workloads/workload.js";
import { settle } from "./workloads/settle.js";
import { checkCompaction, type KvRecord } from "./checker/compaction-checker.js";
import { CleanerWatch } from "./workloads/cleaner-watch.js";
import { readStableKeyed } from "./workloads/compacted-read.js";
import {
  COMPACTED_ABORT_RATIO,
  COMPACTED_PARTITIONS,
  COMPACTED_TOPIC_CONFIG,
  runCompactedWorkload,
  type CompactedResult,
} from "./workloads/compacted.js";
import { slowInits } from "./workloads/txn-session.js";
import type { RunClock, TxnLoopStats } from "./workloads/txn-loop.js";

export const PROCESSES = 4;
const QUEUE_PARTITIONS = 6;
const MONEY_ACCOUNTS = 5;
const COPIER_PARTITIONS = 3;
/** The subscribed copier group: 3 member processes over 6 input partitions (2 each when settled). */
const GROUP_COPIER_PARTITIONS = 6;
const GROUP_COPIER_MEMBERS = 3;
const ABORT_RATIO = 0.1;
const CALL_TIMEOUT_MS = 20_000;
const SETTLE_TIMEOUT_MS = 120_000;
const COPIER_GRACE_MS = 90_000;
/** Inputs per copier partition per second of run: enough that copying outlasts the fault window (a copier copies up to 8 per txn, several txns a second when idle). */
const COPIER_INPUTS_PER_S = 25;
const TOPIC_WAIT_MS = 90_000;
const TAIL_MS = 5_000;
const WORKLOAD_OVERRUN_MS_MAX = 180_000;
/** Compacted workload: how long after settling the run waits for a first completed clean. */
const CLEAN_WAIT_MS = 30_000;

export interface RunOptions {
  readonly scenario: string;
  readonly seed: number;
  readonly durationMs: number;
  readonly reportDir: string;
  readonly log: (line: string) => void;
}

/** The part of a run that depends on the seed only: replaying a seed gives the same plan. */
export function planRun(
  scenarioName: string,
  seed: number,
  durationMs: number,
): { workload: WorkloadKind; schedule: FaultStep[]; partitions: number } {
  const scenario = scenarioNamed(scenarioName);
  const root = new SeededRandom(seed);
  const workload = scenario.workload(root.fork());
  const partitions =
    workload === "queue"
      ? QUEUE_PARTITIONS
      : workload === "money"
        ? MONEY_ACCOUNTS
        : workload === "compacted"
          ? COMPACTED_PARTITIONS
          : isGroupCopier(workload)
            ? GROUP_COPIER_PARTITIONS
            : COPIER_PARTITIONS;
  const processes = processCountOf(workload);
  const schedule = scenario.schedule(root.fork(), {
    durationMs,
    processes,
    transactionalIdOf: (p) => transactionalId(seed, workload, p),
    partitions,
    groupId: groupId(seed),
  });
  return { workload, schedule, partitions };
}

function processCountOf(workload: WorkloadKind): number {
  return workload === "copier"
    ? COPIER_PARTITIONS
    : isGroupCopier(workload)
      ? GROUP_COPIER_MEMBERS
      : PROCESSES;
}

/** The subscribed copier group, on tern's client, librdkafka or kafkajs (group-copier.ts). */
function isGroupCopier(workload: WorkloadKind): boolean {
  return (
    workload === "group-copier" || workload === "kafka-copier" || workload === "kafkajs-copier"
  );
}

const GROUP_COPIER_CLIENTS = {
  "group-copier": "tern",
  "kafka-copier": "librdkafka",
  "kafkajs-copier": "kafkajs",
} as const;

function transactionalId(seed: number, workload: WorkloadKind, process: number): string {
  // The group copier's member processes name their transactional ids alike (group-copier.ts).
  return `chaos-s${seed}-${workload}-${process}`;
}

function groupId(seed: number): string {
  return `chaos-s${seed}-copier-group`;
}

export async function runScenario(cluster: ChaosCluster, o: RunOptions): Promise<ChaosReport> {
  const plan = planRun(o.scenario, o.seed, o.durationMs);
  const scenario = scenarioNamed(o.scenario);
  const root = new SeededRandom(o.seed);
  root.fork();
  root.fork();
  const workloadRng = root.fork();
  const lateRng = root.fork();
  const tag = `chaos-s${o.seed}`;
  const topic = `chaos-${o.scenario}-s${o.seed}-${Date.now().toString(36)}`;
  const clients = new ClusterClients(cluster.controller, cluster.addresses("coordinator"));
  const partitioner = new NetworkPartitioner(cluster.cgroups, `${process.pid % 10_000}`);
  const lateStep = plan.schedule.map((s) => s.action).find((a) => a.kind === "late-requests");
  const late =
    lateStep?.kind === "late-requests"
      ? new LateRequests(
          clients.coordinators,
          lateRng,
          lateStep.probability,
          lateStep.delayMsMin,
          lateStep.delayMsMax,
        )
      : new LateRequests(clients.coordinators, lateRng, 0.3, 200, 3_000);
  let start = performance.now();
  const clock: RunClock = { nowMs: () => performance.now() - start };
  const extraTxns: TxnOp[] = [];
  slowInits.splice(0); // only this run's
  let stopped = false;
  let cleanerWatch: CleanerWatch | undefined;
  o.log(
    `${o.scenario} seed ${o.seed}: ${plan.workload} workload on ${topic}, ${plan.schedule.length} faults`,
  );
  try {
    const copying = plan.workload === "copier" || isGroupCopier(plan.workload);
    const topics = copying
      ? [
          { name: `${topic}-in`, partitions: plan.partitions },
          { name: `${topic}-out`, partitions: plan.partitions },
        ]
      : [{ name: topic, partitions: plan.partitions }];
    // Zombies write to a topic of their own: their data never mixes with the workload's checks.
    const zombieTopic = `${topic}-zombie`;
    // Clock-skew probes write their transactions there too.
    const hasZombie = plan.schedule.some(
      (s) => s.action.kind === "zombie" || s.action.kind === "clock-skew",
    );
    // Damaging a sealed segment needs sealed segments: small ones for the workload's topics.
    // The compacted workload's topic has small segments of its own.
    const config =
      plan.workload === "compacted"
        ? COMPACTED_TOPIC_CONFIG
        : plan.schedule.some((s) => s.action.kind === "corrupt-segment")
          ? SMALL_SEGMENT_CONFIG
          : undefined;
    await createTopicsAndWait(
      clients,
      [
        ...topics.map((t) => ({ ...t, config })),
        ...(hasZombie ? [{ name: zombieTopic, partitions: ZOMBIE_TOPIC_PARTITIONS }] : []),
      ],
      TOPIC_WAIT_MS,
    );
    const zombieKeys = hasZombie
      ? Array.from({ length: ZOMBIE_TOPIC_PARTITIONS }, (_, partition) => ({
          topic: zombieTopic,
          partition,
        }))
      : [];
    // Fault times count from here: topic creation takes seconds on a loaded machine and must not eat the schedule.
    loadTernProto(); // parsed once per process (seconds under load): not inside the first client call
    start = performance.now();
    // The compacted workload: the brokers' cleaner counters, across their restarts.
    cleanerWatch =
      plan.workload === "compacted"
        ? new CleanerWatch(() =>
            cluster.specs.filter((s) => s.role === "broker").map((s) => s.metricsAddress),
          )
        : undefined;
    cleanerWatch?.start();
    const keys = topics.flatMap((t) =>
      Array.from({ length: t.partitions }, (_, partition) => ({ topic: t.name, partition })),
    );
    const processCount = processCountOf(plan.workload);
    // The workload outlives the last fault by TAIL_MS so that commits after the heal are measured.
    let faultsDoneMs: number | undefined;
    const running = (): boolean => {
      const now = clock.nowMs();
      if (now >= o.durationMs + WORKLOAD_OVERRUN_MS_MAX) return false;
      return now < o.durationMs || faultsDoneMs === undefined || now < faultsDoneMs + TAIL_MS;
    };
    const common = {
      tag,
      rng: workloadRng,
      clients,
      clock,
      callTimeoutMs: CALL_TIMEOUT_MS,
      late,
      running,
      abortRatio: ABORT_RATIO,
    };
    const group = isGroupCopier(plan.workload)
      ? new GroupCopierWorkload({
          ...common,
          bootstrap: cluster.addresses("controller").join(","),
          client: GROUP_COPIER_CLIENTS[plan.workload as keyof typeof GROUP_COPIER_CLIENTS],
          kafkaBootstrap: kafkaBootstrap(cluster),
          inTopic: `${topic}-in`,
          outTopic: `${topic}-out`,
          partitions: plan.partitions,
          members: GROUP_COPIER_MEMBERS,
          groupId: groupId(o.seed),
          hardStopMs: () => o.durationMs + COPIER_GRACE_MS,
          log: o.log,
          ...(scenario.kafkajsProducer ? { kafkajsProducer: scenario.kafkajsProducer } : {}),
        })
      : undefined;
    const executor = new FaultExecutor({
      cluster,
      clients,
      partitioner,
      late,
      clock,
      keys,
      zombieTopic,
      zombiePrefix: `${tag}-${o.scenario}`,
      processCount,
      groupIds: copying ? [groupId(o.seed)] : [],
      ...(group ? { members: group } : {}),
      transactionalIdOf: (p) => transactionalId(o.seed, plan.workload, p),
      recordTxn: (t) => extraTxns.push({ ...t, id: 1_000_000 + extraTxns.length }),
      stopped: () => stopped,
    });
    let compacted: CompactedResult | undefined;
    let copierExtras:
      | { inputValues: string[]; offsetCommits: History["offsetCommits"]; outTopic: string }
      | undefined;
    const workload = async (): Promise<WorkloadResult> => {
      if (plan.workload === "queue")
        return runQueueWorkload({
          ...common,
          topic,
          partitions: plan.partitions,
          processes: PROCESSES,
        });
      if (plan.workload === "compacted") {
        compacted = await runCompactedWorkload({
          ...common,
          abortRatio: COMPACTED_ABORT_RATIO,
          topic,
          partitions: plan.partitions,
          processes: PROCESSES,
        });
        return compacted;
      }
      if (plan.workload === "money")
        return runMoneyWorkload({
          ...common,
          topic,
          accounts: plan.partitions,
          processes: PROCESSES,
        });
      if (group) return group.run();
      const copierOptions = {
        ...common,
        inTopic: `${topic}-in`,
        outTopic: `${topic}-out`,
        partitions: plan.partitions,
        inputsPerPartition: Math.max(20, Math.round((o.durationMs / 1_000) * COPIER_INPUTS_PER_S)),
        groupId: groupId(o.seed),
        hardStopMs: () => o.durationMs + COPIER_GRACE_MS,
        paceOverMs: o.durationMs,
      };
      const seedTxns: TxnOp[] = [];
      const seeded = await seedCopierInput(copierOptions, seedTxns, { errors: {} } as TxnLoopStats);
      const r = await runCopierWorkload(copierOptions, { txns: seedTxns, ...seeded });
      copierExtras = {
        inputValues: r.inputValues,
        offsetCommits: r.offsetCommits,
        outTopic: copierOptions.outTopic,
      };
      return r;
    };
    const [result] = await Promise.all([
      workload(),
      executor.run(plan.schedule).then(
        () => {
          faultsDoneMs = clock.nowMs();
        },
        (e) => {
          stopped = true;
          faultsDoneMs = clock.nowMs();
          throw e;
        },
      ),
    ]);
    stopped = true;
    o.log(
      `workload done at ${(clock.nowMs() / 1000).toFixed(1)} s: ${result.txns.length} txns; healing`,
    );
    await executor.heal();
    await late.drain(10_000);
    const zombieIds = executor.events.flatMap((e) => (e.action === "zombie" ? e.nodes : []));
    const settled = await settle(
      clients,
      [...result.transactionalIds, ...zombieIds, ...executor.extraTransactionalIds],
      uniqueKeys([...result.keys, ...zombieKeys, ...executor.extraKeys]),
      SETTLE_TIMEOUT_MS,
    );
    const history: History = {
      txns: [...result.txns, ...extraTxns].map((t, i) => ({ ...t, id: i })),
      finalReads: settled.finalReads,
      offsetCommits: copierExtras?.offsetCommits,
      valuesMayRepeat: copying,
      copier: copierExtras
        ? {
            inputValues: copierExtras.inputValues,
            outputKeyPrefix: `${copierExtras.outTopic}/`,
            transform: "suffix-copied",
          }
        : // The group copier's inputs are fed during the run: the committed ones are what the final read finds in the input topic.
          group
          ? {
              inputValues: finalValues(settled.finalReads, `${topic}-in/`),
              outputKeyPrefix: `${topic}-out/`,
              transform: "demo",
            }
          : undefined,
      money:
        plan.workload === "money"
          ? {
              expectedTotal: BALANCE_INITIAL * plan.partitions,
              finalBalances: balances(plan.partitions, topic, settled.finalReads),
            }
          : undefined,
    };
    // Compaction removes superseded records: the queue checker's reads do not apply there.
    const check = compacted
      ? { valid: true, anomalies: {}, examples: [], counts: countOutcomes(history.txns) }
      : checkHistory(history);
    let compaction: Parameters<typeof buildReport>[0]["compaction"];
    if (compacted && cleanerWatch) {
      // The final read waits for a first completed clean (bounded), so it reads cleaned data.
      const cleaner = await cleanerWatch.waitForClean(CLEAN_WAIT_MS);
      const finalRead: KvRecord[] = [];
      const deadlineMs = Date.now() + SETTLE_TIMEOUT_MS;
      for (let partition = 0; partition < plan.partitions; partition++) {
        const records = await readStableKeyed(clients, topic, partition, deadlineMs);
        if (records === undefined) settled.unreadable.push(`${topic}/${partition} (keyed)`);
        else finalRead.push(...records);
      }
      await cleanerWatch.stop();
      compaction = {
        check: checkCompaction({
          writes: compacted.writes,
          finalRead,
          runReads: compacted.runReads,
          cleaner: cleanerWatch.totals(),
        }),
        cleaner: cleanerWatch.totals(),
      };
      o.log(
        `compacted: cleaners ${cleaner.cleans} cleans, ${cleaner.bytesRead} bytes read before the final read`,
      );
    }
    const report = buildReport({
      scenario: o.scenario,
      seed: o.seed,
      durationMs: o.durationMs,
      workload: plan.workload,
      topic,
      schedule: plan.schedule,
      events: executor.events,
      check,
      history,
      settled,
      stats: result.stats,
      late: late.stats,
      slowInits: slowInits.splice(0),
      compaction,
    });
    writeReport(o.reportDir, report);
    return report;
  } finally {
    stopped = true;
    await cleanerWatch?.stop();
    try {
      partitioner.close();
    } finally {
      clients.close();
    }
  }
}

/** The brokers' Kafka listeners. */
function kafkaBootstrap(cluster: ChaosCluster): string {
  return cluster.specs
    .filter((s) => s.role === "broker" && s.kafkaPort !== undefined)
    .map((s) => `127.0.0.1:${s.kafkaPort}`)
    .join(",");
}

function finalValues(
  reads: Readonly<Record<string, ReadonlyArray<readonly [number, string]>>>,
  keyPrefix: string,
): string[] {
  return Object.entries(reads)
    .filter(([key]) => key.startsWith(keyPrefix))
    .flatMap(([, pairs]) => pairs.map(([, v]) => v));
}

function countOutcomes(txns: readonly TxnOp[]): {
  committed: number;
  aborted: number;
  unknown: number;
} {
  return {
    committed: txns.filter((t) => t.outcome === "ok").length,
    aborted: txns.filter((t) => t.outcome === "fail").length,
    unknown: txns.filter((t) => t.outcome === "unknown").length,
  };
}

function uniqueKeys(
  keys: ReadonlyArray<{ topic: string; partition: number }>,
): Array<{ topic: string; partition: number }> {
  return [...new Map(keys.map((k) => [`${k.topic}/${k.partition}`, k])).values()];
}

function writeReport(dir: string, report: ChaosReport): void {
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `chaos-${report.scenario}-seed${report.seed}-${Date.now()}.json`);
  report.reportPath = path;
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
}

export type { FaultEvent };

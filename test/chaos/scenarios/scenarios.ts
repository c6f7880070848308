// The named chaos scenarios: which workload runs and the fault schedule drawn from the seed.
// Faults fall inside the window [15%, 70%] of the run so that the workload commits before,
// during and after them; the runner heals everything at the end.
import {
  partitionFor,
  OFFSETS_PARTITIONS_DEFAULT,
  TXN_LOG_PARTITIONS_DEFAULT,
} from "../../../libs/common/hash.js";
import type { Random } from "../../../libs/common/prng.js";
import { CONSUMER_OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC } from "../../../libs/metadata/types.js";
import {
  WORKLOAD_TOPIC,
  type FaultAction,
  type FaultStep,
  type SplitKind,
  type Target,
} from "../faults/fault-types.js";
import { SKEW_MS_MAX, SKEW_MS_MIN } from "../faults/clock-skew.js";
import { FAILPOINT_HOLD_MS_DEFAULT } from "../../../libs/common/failpoints.js";
import type { KafkajsProducerOptions } from "../workloads/group-copier.js";

export type WorkloadKind =
  "queue" | "copier" | "money" | "group-copier" | "kafka-copier" | "kafkajs-copier" | "compacted";

export interface ScheduleContext {
  readonly durationMs: number;
  readonly processes: number;
  readonly transactionalIdOf: (process: number) => string;
  /** Partition count of the workload topic (targets name it WORKLOAD_TOPIC). */
  readonly partitions: number;
  readonly groupId: string;
}

export interface Scenario {
  readonly name: string;
  readonly description: string;
  readonly workload: (rng: Random) => WorkloadKind;
  readonly schedule: (rng: Random, ctx: ScheduleContext) => FaultStep[];
  /** The kafkajs copiers' producer settings when the scenario needs other than the copier's own. */
  readonly kafkajsProducer?: KafkajsProducerOptions;
}

const WINDOW_START = 0.15;
const WINDOW_END = 0.7;
const FAULTS_MIN_GAP_MS = 4_000;

/** n fault times spread over the window, each jittered inside its own slice. */
function times(rng: Random, ctx: ScheduleContext, n: number): number[] {
  const lo = ctx.durationMs * WINDOW_START;
  const slice = (ctx.durationMs * (WINDOW_END - WINDOW_START)) / n;
  return Array.from({ length: n }, (_, i) => Math.round(lo + i * slice + rng.next() * slice * 0.5));
}

/** How many faults fit: one per ~FAULTS_MIN_GAP_MS*3 of window, at least one, at most max. */
function faultCount(ctx: ScheduleContext, max: number): number {
  return Math.max(
    1,
    Math.min(
      max,
      Math.floor((ctx.durationMs * (WINDOW_END - WINDOW_START)) / (FAULTS_MIN_GAP_MS * 3)),
    ),
  );
}

function txnLeader(ctx: ScheduleContext, process: number): Extract<Target, { kind: "leader" }> {
  return {
    kind: "leader",
    role: "coordinator",
    topic: TRANSACTION_STATE_TOPIC,
    partition: partitionFor(ctx.transactionalIdOf(process), TXN_LOG_PARTITIONS_DEFAULT),
  };
}

function repeated(
  rng: Random,
  ctx: ScheduleContext,
  max: number,
  make: (rng: Random, i: number) => { action: FaultAction; aimsAtProcess?: number },
): FaultStep[] {
  return times(rng, ctx, faultCount(ctx, max)).map((atMs, i) => ({ atMs, ...make(rng, i) }));
}

/** Fill the disk of the broker leading a workload partition below its reserve, free it after holdMs. */
function diskFull(r: Random, ctx: ScheduleContext): FaultAction {
  return {
    kind: "disk-full",
    target: {
      kind: "leader",
      role: "broker",
      topic: WORKLOAD_TOPIC,
      partition: r.int(0, ctx.partitions),
    },
    holdMs: r.int(2_000, 5_000),
  };
}

/** SIGKILL the broker leading a workload partition, tear its disk as a crash can, restart it. */
function tornDisk(r: Random, ctx: ScheduleContext): FaultAction {
  const tear = {
    kind: r.pick(["short", "bad-checksum"] as const),
    tailBytes: r.int(1, 200),
    seed: r.int(1, 2 ** 31),
  };
  return {
    kind: "torn-disk",
    target: {
      kind: "leader",
      role: "broker",
      topic: WORKLOAD_TOPIC,
      partition: r.int(0, ctx.partitions),
    },
    restartAfterMs: r.int(500, 3_000),
    tear,
  };
}

/**
 * A machine crash that loses what no fsync made durable, on the leader of a workload partition
 * (broker), of a workload id's __transaction_state partition (coordinator), or on a controller;
 * with majority, one more node of the same role at the same moment (two of three).
 */
function lostWrites(r: Random, ctx: ScheduleContext, majority: boolean): FaultAction {
  const role = r.pick(["broker", "broker", "coordinator", "controller"] as const);
  const target: Target =
    role === "broker"
      ? { kind: "leader", role, topic: WORKLOAD_TOPIC, partition: r.int(0, ctx.partitions) }
      : role === "coordinator"
        ? txnLeader(ctx, r.int(0, ctx.processes))
        : { kind: "node", role, id: r.int(0, 3) };
  return {
    kind: "lost-writes",
    target,
    others: majority ? 1 : 0,
    pick: r.int(0, 2),
    restartAfterMs: r.int(500, 3_000),
  };
}

/** Damage a sealed segment (a bit flipped or the file cut short) on one follower of a workload partition. */
function corruptSegment(r: Random, ctx: ScheduleContext): FaultAction {
  return {
    kind: "corrupt-segment",
    target: {
      kind: "leader",
      role: "broker",
      topic: WORKLOAD_TOPIC,
      partition: r.int(0, ctx.partitions),
    },
    pick: r.int(0, 2),
    restartAfterMs: r.int(500, 3_000),
    corrupt: { kind: r.pick(["bit-flip", "truncate"] as const), seed: r.int(1, 2 ** 31) },
  };
}

/** The broker leading a workload partition. */
function brokerLeader(r: Random, ctx: ScheduleContext): Extract<Target, { kind: "leader" }> {
  return {
    kind: "leader",
    role: "broker",
    topic: WORKLOAD_TOPIC,
    partition: r.int(0, ctx.partitions),
  };
}

/**
 * Wall clocks of a workload id's coordinator leader, a workload partition's leader, the group's
 * offsets leader and a controller step by seconds to minutes, 2-3 times, the first jump of the
 * coordinator forward past the workload's 60 s transaction timeout, signs alternating across
 * nodes and jumps (per process: they disagree with each other too).
 */
function clockSkew(r: Random, ctx: ScheduleContext): FaultAction {
  const targets: Target[] = [
    txnLeader(ctx, r.int(0, ctx.processes)),
    brokerLeader(r, ctx),
    {
      kind: "leader",
      role: "broker",
      topic: CONSUMER_OFFSETS_TOPIC,
      partition: partitionFor(ctx.groupId, OFFSETS_PARTITIONS_DEFAULT),
    },
    { kind: "node", role: "controller", id: r.int(0, 3) },
  ];
  const jumps = Array.from({ length: r.int(2, 4) }, (_, j) => ({
    offsetsMs: targets.map((_t, i) => {
      const magnitude =
        j === 0 && i === 0 ? r.int(70_000, SKEW_MS_MAX) : r.int(SKEW_MS_MIN, SKEW_MS_MAX);
      return (j + i) % 2 === 0 ? magnitude : -magnitude;
    }),
    holdMs: r.int(2_000, 5_000),
  }));
  return { kind: "clock-skew", targets, jumps };
}

/** Add the spare broker, remove a workload partition's leader until its replicas moved, bring it back. */
function membershipChange(r: Random, ctx: ScheduleContext): FaultAction {
  return {
    kind: "membership-change",
    remove: brokerLeader(r, ctx),
    returnAfterMs: r.int(1_000, 3_000),
  };
}

/** A partition of one of the shapes by role and shape (partition-shapes.ts). */
function shapedPartition(
  r: Random,
  ctx: ScheduleContext,
  split: "coordinators-from-brokers" | "brokers-from-controllers" | "bridge" | "asymmetric",
  healAfterMs: number,
): FaultAction {
  if (split === "asymmetric")
    return {
      kind: "partition",
      split,
      target: r.bool(0.5) ? txnLeader(ctx, r.int(0, ctx.processes)) : brokerLeader(r, ctx),
      direction: r.pick(["outbound", "inbound"] as const),
      healAfterMs,
    };
  return { kind: "partition", split, minorityIndex: r.int(0, 3), healAfterMs };
}

const SHAPED_SPLITS = [
  "coordinators-from-brokers",
  "brokers-from-controllers",
  "bridge",
  "asymmetric",
] as const;

function shapedPartitionScenario(
  name: string,
  split: (typeof SHAPED_SPLITS)[number],
  description: string,
): Scenario {
  return {
    name,
    description,
    workload: (r) => r.pick(["queue", "money", "copier"] as const),
    schedule: (rng, ctx) =>
      repeated(rng, ctx, 2, (r) => ({
        action: shapedPartition(r, ctx, split, r.int(4_000, 9_000)),
      })),
  };
}

function failpointScenario(
  name: string,
  failpoint: string,
  description: string,
  workload: WorkloadKind,
): Scenario {
  return {
    name,
    description,
    workload: () => workload,
    schedule: (rng, ctx) =>
      repeated(rng, ctx, 3, (r) => ({
        action: { kind: "failpoint", name: failpoint, restartAfterMs: r.int(500, 3_000) },
      })),
  };
}

function partitionScenario(name: string, split: SplitKind, description: string): Scenario {
  return {
    name,
    description,
    workload: () => "queue",
    schedule: (rng, ctx) =>
      repeated(rng, ctx, 2, (r) => {
        const process = r.int(0, ctx.processes);
        return {
          aimsAtProcess: process,
          action: {
            kind: "partition",
            split,
            target: txnLeader(ctx, process),
            minorityIndex: r.int(0, 3),
            healAfterMs: r.int(4_000, 9_000),
          },
        };
      }),
  };
}

const RANDOM_FAILPOINTS = [
  "coordinator.after-prepare-before-markers",
  "coordinator.after-k-markers",
  "coordinator.before-end-txn-response",
  "broker.after-txn-append-before-response",
  "broker.after-marker-append",
  "group.after-txn-offset-commit",
];

function randomAction(
  r: Random,
  ctx: ScheduleContext,
): { action: FaultAction; aimsAtProcess?: number } {
  const process = r.int(0, ctx.processes);
  const kinds = [
    "kill-coord",
    "term-coord",
    "pause-coord",
    "pause-log",
    "kill-broker",
    "failpoint",
    "partition",
    "split",
    "zombie",
    "late",
    "torn-disk",
    "disk-full",
    "lost-writes",
    "lost-writes-majority",
    "corrupt-segment",
    "clock-skew",
    "shaped-partition",
    "membership",
  ] as const;
  const kind = r.pick(kinds);
  switch (kind) {
    case "kill-coord":
      return {
        aimsAtProcess: process,
        action: {
          kind: "signal",
          signal: "SIGKILL",
          target: txnLeader(ctx, process),
          restartAfterMs: r.int(500, 4_000),
        },
      };
    case "term-coord":
      return {
        aimsAtProcess: process,
        action: {
          kind: "signal",
          signal: "SIGTERM",
          target: txnLeader(ctx, process),
          restartAfterMs: r.int(500, 2_000),
        },
      };
    case "pause-coord":
      return {
        aimsAtProcess: process,
        action: {
          kind: "pause",
          target: txnLeader(ctx, process),
          resumeAfterMs: r.int(2_000, 8_000),
        },
      };
    case "pause-log":
      return {
        aimsAtProcess: process,
        action: {
          kind: "pause-replicas",
          target: txnLeader(ctx, process),
          leaderAfterMs: r.int(300, 700),
          resumeAfterMs: r.int(5_500, 8_000),
        },
      };
    case "kill-broker":
      return {
        action: {
          kind: "signal",
          signal: "SIGKILL",
          target: {
            kind: "leader",
            role: "broker",
            topic: WORKLOAD_TOPIC,
            partition: r.int(0, ctx.partitions),
          },
          restartAfterMs: r.int(500, 4_000),
        },
      };
    case "failpoint":
      return {
        action: {
          kind: "failpoint",
          name: r.pick(RANDOM_FAILPOINTS),
          restartAfterMs: r.int(500, 3_000),
        },
      };
    case "partition":
      return {
        aimsAtProcess: process,
        action: {
          kind: "partition",
          split: r.pick(["coordinator-from-brokers", "coordinator-from-peers"] as const),
          target: txnLeader(ctx, process),
          healAfterMs: r.int(3_000, 8_000),
        },
      };
    case "split":
      return {
        action: {
          kind: "partition",
          split: "majority-minority",
          minorityIndex: r.int(0, 3),
          healAfterMs: r.int(3_000, 8_000),
        },
      };
    case "zombie":
      return { action: { kind: "zombie", holdMs: r.int(200, 2_000), idle: r.bool(0.5) } };
    case "torn-disk":
      return { action: tornDisk(r, ctx) };
    case "disk-full":
      return { action: diskFull(r, ctx) };
    case "lost-writes":
      return { action: lostWrites(r, ctx, false) };
    case "lost-writes-majority":
      return { action: lostWrites(r, ctx, true) };
    case "corrupt-segment":
      return { action: corruptSegment(r, ctx) };
    case "clock-skew":
      return { action: clockSkew(r, ctx) };
    case "shaped-partition":
      return {
        action: shapedPartition(r, ctx, r.pick(SHAPED_SPLITS), r.int(3_000, 8_000)),
      };
    case "membership":
      return { action: membershipChange(r, ctx) };
    case "late":
      return {
        action: {
          kind: "late-requests",
          probability: 0.3,
          delayMsMin: 200,
          delayMsMax: 3_000,
          forMs: r.int(3_000, 8_000),
        },
      };
  }
}

/** At least 2 faults, one per ~4 s of the window, at most max: cleaning must happen between and across kills. */
function brokerKillCount(ctx: ScheduleContext, max: number): number {
  const window = ctx.durationMs * (WINDOW_END - WINDOW_START);
  return Math.max(2, Math.min(max, Math.floor(window / FAULTS_MIN_GAP_MS)));
}

/**
 * Compacted topic: SIGKILL the broker leading a workload partition (or, one time in three, any
 * broker: a follower mid-clean), restart it from disk.
 */
function compactedKill(r: Random, ctx: ScheduleContext): FaultAction {
  return {
    kind: "signal",
    signal: "SIGKILL",
    target: r.bool(2 / 3)
      ? brokerLeader(r, ctx)
      : { kind: "node", role: "broker", id: r.int(0, 3) },
    restartAfterMs: r.int(500, 3_000),
  };
}

/** A Kafka-protocol copier group: SIGKILL the coordinator of a copier's transactional id, or the group coordinator. */
function kafkaCopierScenario(
  name: string,
  who: string,
  workload: "kafka-copier" | "kafkajs-copier",
): Scenario {
  return {
    name,
    description: `${who}: SIGKILL the coordinator leading a copier's transactional id, or the broker leading the group's __consumer_offsets partition`,
    workload: () => workload,
    schedule: (rng, ctx) =>
      repeated(rng, ctx, 3, (r) => ({
        action: {
          kind: "signal",
          signal: "SIGKILL",
          restartAfterMs: r.int(500, 4_000),
          target: r.bool(0.6)
            ? txnLeader(ctx, r.int(0, ctx.processes))
            : {
                kind: "leader",
                role: "broker",
                topic: CONSUMER_OFFSETS_TOPIC,
                partition: partitionFor(ctx.groupId, OFFSETS_PARTITIONS_DEFAULT),
              },
        },
      })),
  };
}

/**
 * Issue 35 item 1 on the kafkajs copiers (transactions V1: one epoch across transactions): a
 * partition leader holds the proposal of one copier's transactional batch, after deciding to
 * admit it, for the hold (10 s); the copier's produce times out twice (4 s request timeout, one
 * retry), it aborts, and the ABORT marker is applied while the batch waits. The batch must then
 * be refused; admitted, it opens a transaction no coordinator knows.
 */
const HOLD_KAFKAJS_PRODUCER: KafkajsProducerOptions = { requestTimeoutMs: 4_000, retries: 1 };

function holdTxnBatchScenario(name: string, workload: "kafkajs-copier"): Scenario {
  return {
    name,
    description:
      "kafkajs copier group: a partition leader holds one copier's transactional batch after admitting it, past the copier's produce timeouts, so the copier aborts and the ABORT marker lands before the batch (issue 35 item 1)",
    workload: () => workload,
    kafkajsProducer: HOLD_KAFKAJS_PRODUCER,
    schedule: (rng, ctx) => [
      {
        atMs: Math.round(ctx.durationMs * (WINDOW_START + rng.next() * 0.15)),
        action: {
          kind: "failpoint-hold",
          name: "broker.hold-txn-batch-after-verify-decision",
          holdMs: FAILPOINT_HOLD_MS_DEFAULT,
        },
      },
    ],
  };
}

export const SCENARIOS: readonly Scenario[] = [
  failpointScenario(
    "kill-coordinator-mid-commit",
    "coordinator.after-prepare-before-markers",
    "the coordinator SIGKILLs itself after PrepareCommit/Abort is applied, before any marker",
    "queue",
  ),
  failpointScenario(
    "kill-coordinator-partial-markers",
    "coordinator.after-k-markers",
    "the coordinator SIGKILLs itself after the 2nd marker acknowledgement (money transfers span 2 partitions)",
    "money",
  ),
  failpointScenario(
    "kill-coordinator-before-end",
    "coordinator.before-end-txn-response",
    "the coordinator SIGKILLs itself after deciding, before answering EndTxn",
    "queue",
  ),
  {
    name: "kill-coordinators-back-to-back",
    description:
      "SIGKILL the coordinator leading a workload transactional id, restart it, and SIGKILL the next leader as soon as it is back (before it rejoined)",
    workload: () => "queue",
    schedule: (rng, ctx) =>
      times(rng, ctx, faultCount(ctx, 2)).flatMap((atMs) => {
        const process = rng.int(0, ctx.processes);
        const kill = (restartAfterMs: number): FaultAction => ({
          kind: "signal",
          signal: "SIGKILL",
          target: txnLeader(ctx, process),
          restartAfterMs,
        });
        // Steps run in order: the second starts once the first victim is back and the LSO moved.
        return [
          { atMs, aimsAtProcess: process, action: kill(rng.int(300, 1_500)) },
          { atMs: atMs + 1, aimsAtProcess: process, action: kill(rng.int(500, 3_000)) },
        ];
      }),
  },
  {
    name: "pause-coordinator",
    description: "SIGSTOP the coordinator leading a workload transactional id, SIGCONT later",
    workload: () => "queue",
    schedule: (rng, ctx) =>
      repeated(rng, ctx, 3, (r) => {
        const process = r.int(0, ctx.processes);
        return {
          aimsAtProcess: process,
          action: {
            kind: "pause",
            target: txnLeader(ctx, process),
            resumeAfterMs: r.int(3_000, 8_000),
          },
        };
      }),
  },
  {
    name: "pause-txn-log-replicas",
    description:
      "SIGSTOP all three replicas of a workload id's __transaction_state partition (followers first, so proposals pend) past the propose timeout, SIGCONT together: a decision of unknown outcome must still complete",
    workload: () => "queue",
    schedule: (rng, ctx) =>
      repeated(rng, ctx, 3, (r) => {
        const process = r.int(0, ctx.processes);
        return {
          aimsAtProcess: process,
          action: {
            kind: "pause-replicas",
            target: txnLeader(ctx, process),
            leaderAfterMs: r.int(300, 700),
            resumeAfterMs: r.int(5_500, 8_000),
          },
        };
      }),
  },
  {
    name: "stale-coordinator-view",
    description:
      "the followers of a workload id's __transaction_state partition are cut from the controllers, a topic is created, a transaction on it commits while the leader cannot reach the brokers, the leader is killed: the new leader's view lacks the topic, and must not skip its marker",
    workload: () => "queue",
    schedule: (rng, ctx) =>
      repeated(rng, ctx, 2, (r) => {
        const process = r.int(0, ctx.processes);
        return {
          aimsAtProcess: process,
          action: {
            kind: "stale-view",
            target: txnLeader(ctx, process),
            holdMs: r.int(2_000, 4_000),
          },
        };
      }),
  },
  partitionScenario(
    "partition-coordinator-from-brokers",
    "coordinator-from-brokers",
    "iptables: the coordinator leader of a workload id cannot reach any broker (markers blocked)",
  ),
  partitionScenario(
    "partition-coordinator-from-peers",
    "coordinator-from-peers",
    "iptables: the coordinator leader is cut from its Raft peers (clients and brokers still reach it)",
  ),
  partitionScenario(
    "partition-majority-minority",
    "majority-minority",
    "iptables: one controller, broker and coordinator are cut from the other six",
  ),
  shapedPartitionScenario(
    "partition-coordinators-from-brokers",
    "coordinators-from-brokers",
    "iptables: every coordinator is cut from every broker (markers, verification and the brokers' coordinator lookups blocked); both still reach the controllers",
  ),
  shapedPartitionScenario(
    "partition-brokers-from-controllers",
    "brokers-from-controllers",
    "iptables: every broker is cut from every controller (heartbeats, leader reports and metadata watches stop; brokers still reach each other and the coordinators)",
  ),
  shapedPartitionScenario(
    "partition-bridge",
    "bridge",
    "iptables: two halves (one node of each role each) cannot see each other; the middle node of each role sees both",
  ),
  shapedPartitionScenario(
    "partition-asymmetric",
    "asymmetric",
    "iptables, one direction: everything a workload id's coordinator leader or a workload partition's leader sends to the other nodes is dropped, or everything they send to it",
  ),
  {
    name: "clock-skew",
    description:
      "the wall clocks of a coordinator leader, two broker leaders and a controller jump forward and back by seconds to minutes (each its own offset); transaction timeouts, group sessions, leases, expiry and retention must hold",
    workload: (r) => r.pick(["queue", "money", "copier", "group-copier"] as const),
    schedule: (rng, ctx) => repeated(rng, ctx, 2, (r) => ({ action: clockSkew(r, ctx) })),
  },
  {
    name: "membership-change",
    description:
      "a broker is added (the spare), the broker leading a workload partition is removed until the controller re-placed its replicas on the others and the moved partitions' Raft groups changed membership, then it comes back; transactions run throughout",
    workload: (r) => r.pick(["queue", "money", "copier"] as const),
    schedule: (rng, ctx) => [
      {
        atMs: Math.round(ctx.durationMs * WINDOW_START),
        action: membershipChange(rng, ctx),
      },
    ],
  },
  {
    name: "kill-partition-leader",
    description:
      "SIGKILL (or SIGTERM) the broker leading a workload partition, restart it from disk",
    workload: (r) => r.pick(["queue", "money"] as const),
    schedule: (rng, ctx) =>
      repeated(rng, ctx, 3, (r) => ({
        action: {
          kind: "signal",
          signal: r.bool(0.75) ? "SIGKILL" : "SIGTERM",
          target: {
            kind: "leader",
            role: "broker",
            topic: WORKLOAD_TOPIC,
            partition: r.int(0, ctx.partitions),
          },
          restartAfterMs: r.int(500, 4_000),
        },
      })),
  },
  {
    name: "torn-disk-partition-leader",
    description:
      "SIGKILL the broker leading a workload partition, tear the tails of its journal and active segments (short or bad-checksum records), delete or cut its segment indexes, restart it from that disk",
    workload: (r) => r.pick(["queue", "money"] as const),
    schedule: (rng, ctx) => repeated(rng, ctx, 2, (r) => ({ action: tornDisk(r, ctx) })),
  },
  {
    name: "disk-full-partition-leader",
    description:
      "fill the disk of the broker leading a workload partition below its reserve while it runs (its own tmpfs): produce is refused with KAFKA_STORAGE_ERROR, nothing is lost, writes resume once the space is back",
    workload: (r) => r.pick(["queue", "money"] as const),
    schedule: (rng, ctx) => repeated(rng, ctx, 2, (r) => ({ action: diskFull(r, ctx) })),
  },
  {
    name: "lost-unfsynced-writes",
    description:
      "a machine crash of one node (a workload partition's or transaction log's leader, or a controller): SIGKILL, every file cut back to its last fsync (journal, segments, indexes, level's write-ahead log), restart",
    workload: (r) => r.pick(["queue", "money", "copier"] as const),
    schedule: (rng, ctx) => repeated(rng, ctx, 3, (r) => ({ action: lostWrites(r, ctx, false) })),
  },
  {
    name: "lost-unfsynced-writes-majority",
    description:
      "a machine crash of two of the three nodes of a role at once: both lose every unsynced write; Raft's acknowledgement after fsync must keep everything committed",
    workload: (r) => r.pick(["queue", "money", "copier"] as const),
    schedule: (rng, ctx) => repeated(rng, ctx, 3, (r) => ({ action: lostWrites(r, ctx, true) })),
  },
  {
    name: "corrupt-sealed-segment",
    description:
      "a bit flipped in, or a cut of, a sealed segment of one follower of a workload partition (16 KiB segments), done while it is down: it must report the damage after its restart and never serve it",
    workload: (r) => r.pick(["queue", "money"] as const),
    schedule: (rng, ctx) => repeated(rng, ctx, 3, (r) => ({ action: corruptSegment(r, ctx) })),
  },
  {
    name: "kill-group-coordinator",
    description:
      "subscribed copier group (3 copier processes): SIGKILL the broker leading the group's __consumer_offsets partition",
    workload: () => "group-copier",
    schedule: (rng, ctx) =>
      repeated(rng, ctx, 3, (r) => ({
        action: {
          kind: "signal",
          signal: "SIGKILL",
          target: {
            kind: "leader",
            role: "broker",
            topic: CONSUMER_OFFSETS_TOPIC,
            partition: partitionFor(ctx.groupId, OFFSETS_PARTITIONS_DEFAULT),
          },
          restartAfterMs: r.int(500, 4_000),
        },
      })),
  },
  kafkaCopierScenario(
    "kill-coordinator-kafka-copier",
    "librdkafka copier group (3 confluent-kafka copier processes, Kafka protocol)",
    "kafka-copier",
  ),
  kafkaCopierScenario(
    "kill-coordinator-kafkajs-copier",
    "kafkajs copier group (3 kafkajs copier processes, Kafka protocol, transactions V1)",
    "kafkajs-copier",
  ),
  holdTxnBatchScenario("hold-txn-batch-kafkajs-copier", "kafkajs-copier"),
  {
    name: "kill-group-member",
    description:
      "subscribed copier group (3 copier processes): SIGKILL one copier mid-run and restart it; the others take its partitions after the session timeout",
    workload: () => "group-copier",
    schedule: (rng, ctx) =>
      repeated(rng, ctx, 3, (r) => ({
        action: {
          kind: "kill-member",
          member: r.int(0, ctx.processes),
          restartAfterMs: r.int(500, 4_000),
        },
      })),
  },
  {
    name: "pause-group-member",
    description:
      "subscribed copier group: SIGSTOP one copier as it begins a transaction, past the 6 s session timeout, then SIGCONT it; fenced, its offsets and transaction must be refused (a zombie copier)",
    workload: () => "group-copier",
    schedule: (rng, ctx) =>
      repeated(rng, ctx, 2, (r) => ({
        action: {
          kind: "pause-member",
          member: r.int(0, ctx.processes),
          resumeAfterMs: r.int(7_500, 10_000),
        },
      })),
  },
  failpointScenario(
    "kill-partition-leader-after-txn-append",
    "broker.after-txn-append-before-response",
    "the broker leading a partition SIGKILLs itself after a transactional batch is applied, before the Produce answer",
    "queue",
  ),
  failpointScenario(
    "kill-partition-leader-after-marker",
    "broker.after-marker-append",
    "a broker SIGKILLs itself after a WriteTxnMarkers append is applied, before answering (money: 2 partitions per transaction)",
    "money",
  ),
  failpointScenario(
    "kill-group-coordinator-after-txn-offset-commit",
    "group.after-txn-offset-commit",
    "copier: the group coordinator SIGKILLs itself after a TxnOffsetCommit is applied, before answering",
    "copier",
  ),
  {
    name: "zombie-producer",
    description:
      "a producer on its own transactional id commits, opens a transaction, is fenced by a new instance; every later request of it must be refused, none of its open writes visible",
    workload: () => "queue",
    schedule: (rng, ctx) =>
      repeated(rng, ctx, 4, (r) => ({ action: { kind: "zombie", holdMs: r.int(100, 2_000) } })),
  },
  {
    name: "zombie-reinit",
    description:
      "an idle producer is replaced by a new instance (InitProducerId without an identity); its KIP-360 re-init with the identity it holds must be PRODUCER_FENCED, never handed the new instance's identity",
    workload: () => "queue",
    schedule: (rng, ctx) =>
      repeated(rng, ctx, 4, (r) => ({
        action: { kind: "zombie", holdMs: r.int(100, 1_000), idle: true },
      })),
  },
  {
    name: "delayed-end-txn",
    description:
      "late, reordered copies of EndTxn and AddPartitionsToTxn arrive after the client moved on",
    workload: (r) => r.pick(["queue", "money"] as const),
    schedule: (rng, ctx) => [
      {
        atMs: Math.round(ctx.durationMs * WINDOW_START),
        action: {
          kind: "late-requests",
          probability: 0.3 + rng.next() * 0.4,
          delayMsMin: 100,
          delayMsMax: 4_000,
          forMs: Math.round(ctx.durationMs * (WINDOW_END - WINDOW_START)),
        },
      },
    ],
  },
  {
    name: "kill-brokers-compacted",
    description:
      "compacted topic (16 KiB segments, cleaned within seconds, deletes and aborted transactions): SIGKILL the broker leading a workload partition or any broker while the cleaners clean, restart it; checked: every key's latest committed value kept, no aborted value read, no deleted key back, the cleaner ran",
    workload: () => "compacted",
    schedule: (rng, ctx) =>
      times(rng, ctx, brokerKillCount(ctx, 5)).map((atMs) => ({
        atMs,
        action: compactedKill(rng, ctx),
      })),
  },
  {
    name: "random",
    description:
      "a seeded mix of every fault above, on a seeded workload: tern's clients (queue, money, copier, the copier group, keyed updates to a compacted topic) or the Kafka-protocol copier groups (librdkafka, kafkajs: transactions V1)",
    workload: (r) =>
      r.pick([
        "queue",
        "money",
        "copier",
        "group-copier",
        "kafka-copier",
        "kafkajs-copier",
        "compacted",
      ] as const),
    schedule: (rng, ctx) => repeated(rng, ctx, 6, (r) => randomAction(r, ctx)),
  },
];

export function scenarioNamed(name: string): Scenario {
  const s = SCENARIOS.find((x) => x.name === name);
  if (!s)
    throw new Error(
      `unknown scenario "${name}"; known: ${SCENARIOS.map((x) => x.name).join(", ")}`,
    );
  return s;
}

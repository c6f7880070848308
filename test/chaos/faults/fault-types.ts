// The fault schedule of a run: plain data drawn from the seed before anything starts, so the
// same seed always yields the same schedule (the report prints it; a failing seed replays it).
// Targets name a role and node id, or "the current leader of Raft group topic/partition",
// resolved through the controller's metadata when the step runs. The topic WORKLOAD_TOPIC stands
// for the run's own workload topic (its name is unique per run; the schedule must not be).
import type { Role } from "../../../libs/common/config.js";
import type { TearPlan } from "./torn-disk.js";
import type { CorruptPlan } from "./corrupt-segment.js";

export type Target =
  | { readonly kind: "node"; readonly role: Role; readonly id: number }
  | {
      readonly kind: "leader";
      readonly role: "broker" | "coordinator";
      readonly topic: string;
      readonly partition: number;
    };

/** Partition shapes (partition-shapes.ts). */
export type SplitKind =
  /** the target coordinator leader <-> every broker */
  | "coordinator-from-brokers"
  /** the target coordinator leader <-> the other coordinators */
  | "coordinator-from-peers"
  /** one node of each role (id minorityIndex) <-> the other six */
  | "majority-minority"
  /** every coordinator <-> every broker; both still reach the controllers */
  | "coordinators-from-brokers"
  /** every broker <-> every controller */
  | "brokers-from-controllers"
  /** two halves cut from each other, each seeing the middle nodes (id minorityIndex) */
  | "bridge"
  /** one direction only: the target's packets to every other node, or theirs to it */
  | "asymmetric";

export type FaultAction =
  | {
      readonly kind: "signal";
      readonly signal: "SIGKILL" | "SIGTERM";
      readonly target: Target;
      readonly restartAfterMs: number;
    }
  | { readonly kind: "pause"; readonly target: Target; readonly resumeAfterMs: number }
  /** Fill the target broker's disk (its own tmpfs) below its reserve while it runs; free it after holdMs (disk-full.ts). */
  | { readonly kind: "disk-full"; readonly target: Target; readonly holdMs: number }
  /** SIGKILL the target broker, tear its disk as a crash can (torn-disk.ts), start it again after restartAfterMs. */
  | {
      readonly kind: "torn-disk";
      readonly target: Target;
      readonly restartAfterMs: number;
      readonly tear: TearPlan;
    }
  /**
   * SIGKILL a follower of the target's partition (pick chooses which), damage one of its sealed
   * segments (corrupt-segment.ts), start it again after restartAfterMs: it must find the damage.
   */
  | {
      readonly kind: "corrupt-segment";
      readonly target: Extract<Target, { kind: "leader" }>;
      readonly pick: number;
      readonly restartAfterMs: number;
      readonly corrupt: CorruptPlan;
    }
  /**
   * A machine crash: SIGKILL the target and `others` more nodes of its role at once (1: a
   * majority of three), cut every file they left unsynced back to its last fsync
   * (lost-writes.ts), start them again after restartAfterMs. `pick` chooses the others.
   */
  | {
      readonly kind: "lost-writes";
      readonly target: Target;
      readonly others: number;
      readonly pick: number;
      readonly restartAfterMs: number;
    }
  /**
   * SIGSTOP every replica of the Raft group the target leads: its followers first, so the leader
   * accepts proposals it cannot commit for leaderAfterMs (well under check-quorum's timeout),
   * then the leader; SIGCONT all together after resumeAfterMs (past the propose timeout).
   */
  | {
      readonly kind: "pause-replicas";
      readonly target: Extract<Target, { kind: "leader" }>;
      readonly leaderAfterMs: number;
      readonly resumeAfterMs: number;
    }
  | { readonly kind: "failpoint"; readonly name: string; readonly restartAfterMs: number }
  /**
   * A failpoint that holds instead of killing (libs/common/failpoints.ts Failpoints.hold): armed
   * once, the first process to reach it waits holdMs (the cluster's TERN_FAILPOINT_HOLD_MS)
   * and carries on.
   */
  | { readonly kind: "failpoint-hold"; readonly name: string; readonly holdMs: number }
  | {
      readonly kind: "partition";
      readonly split: SplitKind;
      readonly target?: Target;
      readonly minorityIndex?: number;
      /** asymmetric: drop what the target sends (outbound) or what it receives (inbound). */
      readonly direction?: "outbound" | "inbound";
      readonly healAfterMs: number;
    }
  | {
      readonly kind: "late-requests";
      readonly probability: number;
      readonly delayMsMin: number;
      readonly delayMsMax: number;
      readonly forMs: number;
    }
  /**
   * The followers of the target's __transaction_state partition are cut from the controllers, a
   * topic is created, a transaction on it commits while the leader cannot reach the brokers, the
   * leader is SIGKILLed: a follower with a view that lacks the topic resumes its markers.
   */
  | {
      readonly kind: "stale-view";
      readonly target: Extract<Target, { kind: "leader" }>;
      readonly holdMs: number;
    }
  /**
   * Step the wall clocks of the targets (clock-skew.ts): during jump j target i's clock is
   * offsetsMs[j][i] ahead (negative: behind) for holdMs; after the last jump every clock steps
   * back to true time. Monotonic time is never touched.
   */
  | {
      readonly kind: "clock-skew";
      readonly targets: readonly Target[];
      readonly jumps: ReadonlyArray<{
        readonly offsetsMs: readonly number[];
        readonly holdMs: number;
      }>;
    }
  /**
   * A membership change under load (membership.ts): the spare broker is added (started; it
   * registers), the broker leading a workload partition is removed (SIGTERM, kept down until
   * the controller re-placed its replicas and the new replica sets have leaders), and comes
   * back afterwards as a node without those replicas.
   */
  | {
      readonly kind: "membership-change";
      readonly remove: Extract<Target, { kind: "leader" }>;
      /** How long the removed broker stays away after its replicas moved. */
      readonly returnAfterMs: number;
    }
  /** idle: the zombie holds no open transaction when fenced (its re-init with the identity it holds must be refused). */
  | { readonly kind: "zombie"; readonly holdMs: number; readonly idle?: boolean }
  /** SIGKILL one member process of the workload's consumer group (group copier), start it again after restartAfterMs. */
  | { readonly kind: "kill-member"; readonly member: number; readonly restartAfterMs: number }
  /** SIGSTOP one member process past the group session timeout (it is fenced), SIGCONT it: a zombie copier. */
  | { readonly kind: "pause-member"; readonly member: number; readonly resumeAfterMs: number };

export interface FaultStep {
  /** ms after the workload started. */
  readonly atMs: number;
  readonly action: FaultAction;
  /** The workload process whose transactions the fault aims at (for kill -> first commit). */
  readonly aimsAtProcess?: number;
}

/** What happened when a step ran, with the recovery times it measured. */
export interface FaultEvent {
  readonly step: number;
  readonly action: FaultAction["kind"];
  readonly startedMs: number;
  endedMs?: number;
  /** When the kill / pause / cut took effect (ms since the workload started). */
  killMs?: number;
  aimsAtProcess?: number;
  /** kill -> commit counts the first commit polling one of these keys (a killed member's partitions: their takeover). */
  aimsAtKeys?: string[];
  /** Resolved node(s), e.g. "coordinator-2". */
  nodes: string[];
  /** The Raft groups the killed/paused/cut node led at that moment. */
  groups?: string[];
  killToLeaderS?: number;
  killToCommitS?: number;
  healToLsoS?: number;
  note?: string;
  error?: string;
  /** Guarantees the step saw broken (a fenced zombie's request accepted...): each a bug. */
  violations?: string[];
}

export const WORKLOAD_TOPIC = "@workload";

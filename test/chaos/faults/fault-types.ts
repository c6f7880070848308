// The fault schedule of a run: plain data drawn from the seed before anything starts, so the
// same seed always yields the same schedule (the report prints it; a failing seed replays it).
// Targets name a role and node id, or "the current leader of Raft group topic/partition",
// resolved through the controller's metadata when the step runs. The topic WORKLOAD_TOPIC stands
// for the run's own workload topic (its name is unique per run; the schedule must not be).
import type { Role } from "../../../libs/common/config.js";

export type Target =
  | { readonly kind: "node"; readonly role: Role; readonly id: number }
  | { readonly kind: "leader"; readonly role: "broker" | "coordinator"; readonly topic: string; readonly partition: number };

export type SplitKind = "coordinator-from-brokers" | "coordinator-from-peers" | "majority-minority";

export type FaultAction =
  | { readonly kind: "signal"; readonly signal: "SIGKILL" | "SIGTERM"; readonly target: Target; readonly restartAfterMs: number }
  | { readonly kind: "pause"; readonly target: Target; readonly resumeAfterMs: number }
  | { readonly kind: "failpoint"; readonly name: string; readonly restartAfterMs: number }
  | { readonly kind: "partition"; readonly split: SplitKind; readonly target?: Target; readonly minorityIndex?: number; readonly healAfterMs: number }
  | { readonly kind: "late-requests"; readonly probability: number; readonly delayMsMin: number; readonly delayMsMax: number; readonly forMs: number }
  | { readonly kind: "zombie"; readonly holdMs: number };

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

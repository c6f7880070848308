// The run anomalies the report adds on top of the checker's: a zombie request that was accepted,
// or a killed group member's partitions never copied again, fail the run even when the history
// itself is clean.
import { describe, expect, it } from "vitest";
import { checkHistory } from "../../libs/verify/checker.js";
import type { History } from "../../libs/verify/history.js";
import type { FaultEvent } from "./faults/fault-types.js";
import { buildReport } from "./report.js";

function report(events: FaultEvent[]) {
  const history: History = {
    txns: [
      {
        id: 0,
        process: 1000,
        outcome: "ok",
        ops: [{ f: "send", key: "z/0", value: "v", offset: 0 }],
        invokedMs: 0,
        completedMs: 1,
      },
    ],
    finalReads: { "z/0": [[0, "v"]] },
  };
  return buildReport({
    scenario: "zombie-producer",
    seed: 1,
    durationMs: 1_000,
    workload: "queue",
    topic: "t",
    schedule: [],
    events,
    check: checkHistory(history),
    history,
    settled: { fenced: [], notFenced: [], finalReads: { "z/0": [[0, "v"]] }, unreadable: [] },
    stats: { errors: {} },
    late: { sent: 0, answers: {} },
  });
}

describe("chaos report", () => {
  it("passes a clean zombie step and fails one whose fenced requests were accepted", () => {
    const clean: FaultEvent = {
      step: 0,
      action: "zombie",
      startedMs: 0,
      nodes: ["z"],
      note: "EndTxn(commit): PRODUCER_FENCED",
    };
    expect(report([clean]).pass).toBe(true);
    const broken: FaultEvent = {
      ...clean,
      violations: [
        "produce to its partition after fence ACCEPTED (7)",
        "EndTxn(commit) after fence ACCEPTED",
      ],
    };
    const r = report([broken]);
    expect(r.pass).toBe(false);
    expect(r.anomalies["zombie-not-fenced"]).toBe(2);
  });

  it("fails a killed group member whose partitions nobody committed from afterwards; kill -> commit is the takeover", () => {
    const killed: FaultEvent = {
      step: 0,
      action: "kill-member",
      startedMs: 0,
      killMs: 0,
      nodes: ["group-member-0"],
      aimsAtKeys: ["in/3"],
    };
    const r = report([killed]);
    expect(r.anomalies["partitions-not-taken-over"]).toBe(1);
    // A commit after the kill that polled one of its partitions is the takeover.
    const history: History = {
      txns: [
        {
          id: 0,
          process: 2,
          outcome: "ok",
          ops: [{ f: "poll", reads: { "in/3": [[5, "x"]] } }],
          invokedMs: 6_000,
          completedMs: 6_500,
        },
      ],
      finalReads: {},
    };
    const taken = buildReport({
      scenario: "kill-group-member",
      seed: 1,
      durationMs: 1_000,
      workload: "group-copier",
      topic: "t",
      schedule: [],
      events: [{ ...killed }],
      check: checkHistory(history),
      history,
      settled: { fenced: [], notFenced: [], finalReads: {}, unreadable: [] },
      stats: { errors: {} },
      late: { sent: 0, answers: {} },
    });
    expect(taken.anomalies).toEqual({});
    expect(taken.recovery.kill_to_commit_s).toBe(6.5);
  });
});

// The run anomalies the report adds on top of the checker's: a zombie request that was accepted
// fails the run even when the history itself is clean.
import { describe, expect, it } from "vitest";
import { checkHistory } from "./checker/checker.js";
import type { History } from "./checker/history.js";
import type { FaultEvent } from "./faults/fault-types.js";
import { buildReport } from "./report.js";

function report(events: FaultEvent[]) {
  const history: History = { txns: [{ id: 0, process: 1000, outcome: "ok", ops: [{ f: "send", key: "z/0", value: "v", offset: 0 }], invokedMs: 0, completedMs: 1 }], finalReads: { "z/0": [[0, "v"]] } };
  return buildReport({
    scenario: "zombie-producer", seed: 1, durationMs: 1_000, workload: "queue", topic: "t", schedule: [], events, check: checkHistory(history), history,
    settled: { fenced: [], notFenced: [], finalReads: { "z/0": [[0, "v"]] }, unreadable: [] }, stats: { errors: {} }, late: { sent: 0, answers: {} },
  });
}

describe("chaos report", () => {
  it("passes a clean zombie step and fails one whose fenced requests were accepted", () => {
    const clean: FaultEvent = { step: 0, action: "zombie", startedMs: 0, nodes: ["z"], note: "EndTxn(commit): PRODUCER_FENCED" };
    expect(report([clean]).pass).toBe(true);
    const broken: FaultEvent = { ...clean, violations: ["produce to its partition after fence ACCEPTED (7)", "EndTxn(commit) after fence ACCEPTED"] };
    const r = report([broken]);
    expect(r.pass).toBe(false);
    expect(r.anomalies["zombie-not-fenced"]).toBe(2);
  });
});

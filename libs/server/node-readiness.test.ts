// A broker's or coordinator's readiness: registered, a view that lists it, and its role's gate;
// reported to health only on change, and dropped for good by a drain's drop() until re-earned.
import { describe, expect, it } from "vitest";
import { ClusterView } from "../metadata/cluster-view.js";
import type { ClusterMetadata } from "../metadata/types.js";
import { NodeReadiness } from "./node-readiness.js";

const listing = (nodeIds: number[]): ClusterMetadata => ({
  version: "1",
  controllerLeader: 0,
  nodes: nodeIds.map((nodeId) => ({
    nodeId,
    role: "broker" as const,
    address: `h:${nodeId}`,
    alive: true,
    incarnation: "i",
  })),
  topics: [],
});

/** A gate that passes when told to, calling back the way CatchUpGate does. */
class ManualGate {
  passed = false;
  starts = 0;
  private onPassed: (() => void) | undefined;
  hasPassed(): boolean {
    return this.passed;
  }
  start(onPassed: () => void): void {
    this.starts += 1;
    this.onPassed = onPassed;
  }
  pass(): void {
    this.passed = true;
    this.onPassed?.();
  }
}

describe("NodeReadiness", () => {
  it("is ready once registered and listed in the view, and reports each change once", () => {
    const view = new ClusterView();
    const reports: boolean[] = [];
    const r = new NodeReadiness({
      role: "broker",
      nodeId: 1,
      view,
      setReady: (x) => reports.push(x),
    });
    r.setRegistered(true);
    r.refresh();
    expect(reports).toEqual([]); // no metadata yet
    view.update(listing([2]));
    r.refresh();
    expect(reports).toEqual([]); // a view that does not list this node
    view.update(listing([1, 2]));
    r.refresh();
    r.refresh();
    expect(reports).toEqual([true]);
    r.setRegistered(false);
    expect(reports).toEqual([true, false]);
  });

  it("waits for the role's gate, started once the basic condition holds", () => {
    const view = new ClusterView();
    const gate = new ManualGate();
    const reports: boolean[] = [];
    const r = new NodeReadiness({
      role: "broker",
      nodeId: 1,
      view,
      gate,
      setReady: (x) => reports.push(x),
    });
    r.setRegistered(true);
    expect(gate.starts).toBe(0);
    view.update(listing([1]));
    r.refresh();
    expect(gate.starts).toBe(1);
    expect(reports).toEqual([]);
    gate.pass();
    expect(reports).toEqual([true]);
  });

  it("drop() reports not ready; the next change re-evaluates", () => {
    const view = new ClusterView();
    view.update(listing([1]));
    const reports: boolean[] = [];
    const r = new NodeReadiness({
      role: "broker",
      nodeId: 1,
      view,
      setReady: (x) => reports.push(x),
    });
    r.setRegistered(true);
    r.drop();
    expect(reports).toEqual([true, false]);
  });
});

import { describe, expect, it } from "vitest";
import { TestCluster, appliedData } from "./test-harness.js";

describe("RawNode basics", () => {
  it("elects a leader and replicates", () => {
    const c = new TestCluster([1, 2, 3]);
    c.elect(1);
    expect(c.leader()).toBe(1);
    c.propose(1, "a");
    c.propose(1, "b");
    for (const id of [1, 2, 3]) expect(appliedData(c.get(id))).toEqual(["a", "b"]);
  });

  it("elects by ticking", () => {
    const c = new TestCluster([1, 2, 3]);
    c.tickAll(40);
    expect(c.leader()).toBeDefined();
  });
});

import { describe, expect, it } from "vitest";
import { loadOf, placePartitions, replaceReplicas, type PlacementNode } from "./placement.js";

const nodes = (n: number, racks?: string[]): PlacementNode[] =>
  Array.from({ length: n }, (_, i) =>
    racks ? { nodeId: i, rack: racks[i % racks.length]! } : { nodeId: i },
  );

describe("placePartitions", () => {
  it("spreads replicas and preferred leaders evenly", () => {
    const load = new Map();
    const placed = placePartitions(nodes(4), load, 50, 3);
    expect(placed).toHaveLength(50);
    for (const r of placed) expect(new Set(r).size).toBe(3);
    const l = loadOf(placed);
    const replicas = [...l.values()].map((x) => x.replicas);
    const leaders = [...l.values()].map((x) => x.leaders);
    expect(Math.max(...replicas) - Math.min(...replicas)).toBeLessThanOrEqual(1);
    expect(Math.max(...leaders) - Math.min(...leaders)).toBeLessThanOrEqual(1);
    expect(replicas.reduce((a, b) => a + b, 0)).toBe(150);
  });

  it("keeps spreading evenly across several topics through the shared load", () => {
    const load = new Map();
    for (let t = 0; t < 7; t++) placePartitions(nodes(5), load, 1, 1);
    const counts = [...load.values()].map((x) => x.replicas);
    expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(1);
  });

  it("uses distinct racks for a partition's replicas when possible", () => {
    const ns = nodes(6, ["a", "b", "c"]);
    const placed = placePartitions(ns, new Map(), 30, 3);
    for (const r of placed) {
      const racks = new Set(r.map((id) => ns[id]!.rack));
      expect(racks.size).toBe(3);
    }
  });

  it("falls back to shared racks when there are fewer racks than replicas", () => {
    const ns = nodes(4, ["a", "b"]);
    const placed = placePartitions(ns, new Map(), 10, 3);
    for (const r of placed) {
      expect(new Set(r).size).toBe(3);
      expect(new Set(r.map((id) => ns[id]!.rack)).size).toBe(2);
    }
  });

  it("is deterministic", () => {
    expect(placePartitions(nodes(5), new Map(), 20, 3)).toEqual(
      placePartitions(nodes(5), new Map(), 20, 3),
    );
  });

  it("asserts on a replication factor above the node count", () => {
    expect(() => placePartitions(nodes(2), new Map(), 1, 3)).toThrow(/replication factor/);
  });
});

describe("replaceReplicas", () => {
  it("replaces a gone replica with the least-loaded live node not in the set", () => {
    const live = nodes(4).filter((n) => n.nodeId !== 1);
    const load = loadOf([
      [0, 1, 2],
      [2, 3, 0],
      [3, 0, 1],
    ]);
    const out = replaceReplicas([0, 1, 2], new Set([1]), live, load);
    expect(out).toEqual([0, 2, 3]);
  });

  it("promotes the first survivor when the preferred leader is gone", () => {
    const live = nodes(4).filter((n) => n.nodeId !== 0);
    expect(replaceReplicas([0, 1, 2], new Set([0]), live, new Map())).toEqual([1, 2, 3]);
  });

  it("keeps the list unchanged when no live node is free", () => {
    const live = nodes(3).filter((n) => n.nodeId !== 2);
    expect(replaceReplicas([0, 1, 2], new Set([2]), live, new Map())).toEqual([0, 1, 2]);
  });

  it("prefers a rack not used by the survivors", () => {
    const ns: PlacementNode[] = [
      { nodeId: 0, rack: "a" },
      { nodeId: 1, rack: "b" },
      { nodeId: 2, rack: "c" },
      { nodeId: 3, rack: "a" },
      { nodeId: 4, rack: "c" },
    ];
    const live = ns.filter((n) => n.nodeId !== 2);
    // Node 3 (rack a) is lighter than node 4 (rack c), but rack c is the one not in use.
    const load = loadOf([
      [4, 0, 1],
      [4, 1, 0],
    ]);
    expect(replaceReplicas([0, 1, 2], new Set([2]), live, load)).toEqual([0, 1, 4]);
  });
});

import { describe, expect, it } from "vitest";
import { ClusterView } from "./cluster-view.js";
import type { ClusterMetadata } from "./types.js";

const view = (version: string): ClusterMetadata => ({
  version,
  controllerLeader: 0,
  nodes: [],
  topics: [],
});

describe("ClusterView", () => {
  it("holds nothing until the first update, then the latest one", () => {
    const v = new ClusterView();
    expect(v.current()).toBeUndefined();
    const first = view("1");
    v.update(first);
    expect(v.current()).toBe(first);
    const second = view("2");
    v.update(second);
    expect(v.current()).toBe(second);
  });

  it("hands out current as a function that stays bound to its view", () => {
    const v = new ClusterView();
    const { current } = v;
    const first = view("1");
    v.update(first);
    expect(current()).toBe(first);
  });
});

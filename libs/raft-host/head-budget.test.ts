import { describe, expect, it } from "vitest";
import { HeadBudget } from "./head-budget.js";

describe("HeadBudget", () => {
  it("asks nothing while the total is within the budget", () => {
    const b = new HeadBudget(100);
    b.opened();
    b.opened();
    b.applied(60);
    b.applied(40);
    expect(b.usedBytes()).toBe(100);
    expect(b.shouldRelease(60)).toBe(false);
  });

  it("past the budget, asks a group holding at least an even share, not a small one", () => {
    const b = new HeadBudget(100);
    for (let i = 0; i < 4; i++) b.opened();
    b.applied(90);
    b.applied(20);
    expect(b.shouldRelease(90)).toBe(true);
    expect(b.shouldRelease(20)).toBe(false);
    // Of four groups, one holding a quarter of the budget is asked too.
    expect(b.shouldRelease(25)).toBe(true);
  });

  it("a release or a closed group brings the total back under", () => {
    const b = new HeadBudget(100);
    b.opened();
    b.opened();
    b.applied(80);
    b.applied(50);
    b.released(80);
    expect(b.usedBytes()).toBe(50);
    expect(b.shouldRelease(50)).toBe(false);
    b.closed(50);
    expect(b.usedBytes()).toBe(0);
    b.released(10);
    expect(b.usedBytes()).toBe(0);
  });
});

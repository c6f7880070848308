import { describe, expect, it } from "vitest";
import { HeadBudget, type HeadHolder } from "./head-budget.js";

/** A holder whose snapshot lets its whole head go, unless it is syncing the previous one. */
class Holder implements HeadHolder {
  bytes = 0;
  syncing = false;
  releases = 0;
  constructor(private readonly budget: HeadBudget) {
    budget.opened(this);
  }
  apply(bytes: number): void {
    this.bytes += bytes;
    this.budget.applied(bytes);
  }
  headBytes(): number {
    return this.bytes;
  }
  releaseHead(): void {
    if (this.syncing) return;
    this.releases += 1;
    this.budget.released(this.bytes);
    this.bytes = 0;
  }
}

describe("HeadBudget", () => {
  it("asks nothing while the total is within the budget", () => {
    const b = new HeadBudget(100);
    const [x, y] = [new Holder(b), new Holder(b)];
    x.apply(60);
    y.apply(40);
    b.enforce();
    expect(b.usedBytes()).toBe(100);
    expect(b.overBudget()).toBe(false);
    expect(x.releases + y.releases).toBe(0);
  });

  it("past the budget the largest head releases, not the small one that crossed it", () => {
    const b = new HeadBudget(100);
    const [big, mid, small] = [new Holder(b), new Holder(b), new Holder(b)];
    big.apply(50);
    mid.apply(40);
    small.apply(20);
    b.enforce();
    expect([big.releases, mid.releases, small.releases]).toEqual([1, 0, 0]);
    expect(b.usedBytes()).toBe(60);
  });

  it("releases largest first until the total is at three quarters of the budget", () => {
    const b = new HeadBudget(100);
    const holders = [30, 28, 26, 24].map((n) => {
      const h = new Holder(b);
      h.apply(n);
      return h;
    });
    b.enforce();
    // 108 - 30 = 78 is still past 75; then 78 - 28 = 50.
    expect(holders.map((h) => h.releases)).toEqual([1, 1, 0, 0]);
    expect(b.usedBytes()).toBe(50);
  });

  it("passes over a holder still syncing, and the one named as unable to snapshot now", () => {
    const b = new HeadBudget(100);
    const [syncing, applyingConfChange, other] = [new Holder(b), new Holder(b), new Holder(b)];
    syncing.apply(50);
    syncing.syncing = true;
    applyingConfChange.apply(40);
    other.apply(30);
    b.enforce(applyingConfChange);
    expect([syncing.releases, applyingConfChange.releases, other.releases]).toEqual([0, 0, 1]);
    expect(b.usedBytes()).toBe(90);
  });

  it("after a pass that fell short, asks again only once another quarter is applied", () => {
    const b = new HeadBudget(100);
    const [syncing, small] = [new Holder(b), new Holder(b)];
    syncing.apply(90);
    syncing.syncing = true;
    small.apply(20);
    b.enforce();
    expect(small.releases).toBe(1);
    expect(b.usedBytes()).toBe(90); // short of 75: the next pass waits for 90 + 25
    syncing.syncing = false;
    small.apply(20);
    b.enforce();
    expect([syncing.releases, small.releases]).toEqual([0, 1]);
    small.apply(5);
    b.enforce();
    expect([syncing.releases, small.releases]).toEqual([1, 1]);
    expect(b.usedBytes()).toBe(25);
    // Back under the mark: the next crossing is acted on at once.
    small.apply(80);
    b.enforce();
    expect(small.releases).toBe(2);
  });

  it("a closed group takes its head out of the total and is never asked again", () => {
    const b = new HeadBudget(100);
    const [x, y] = [new Holder(b), new Holder(b)];
    x.apply(80);
    y.apply(10);
    b.closed(x);
    expect(b.usedBytes()).toBe(10);
    b.closed(x); // twice: counted once
    expect(b.usedBytes()).toBe(10);
    y.apply(100);
    b.enforce();
    expect([x.releases, y.releases]).toEqual([0, 1]);
    expect(b.usedBytes()).toBe(0);
  });
});

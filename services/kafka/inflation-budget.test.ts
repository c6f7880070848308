import { describe, expect, it } from "vitest";
import { InflationBudget } from "./inflation-budget.js";

/** Whether the promise has settled after the pending microtasks ran. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((r) => setImmediate(r));
  return done;
}

describe("InflationBudget", () => {
  it("makes a reservation wait until earlier holds give back enough, in arrival order", async () => {
    const budget = new InflationBudget(100);
    const a = await budget.acquire(60);
    const b = budget.acquire(60);
    const c = budget.acquire(10); // fits, but waits behind b
    expect(await settled(b)).toBe(false);
    expect(await settled(c)).toBe(false);
    a.release();
    expect(await settled(b)).toBe(true);
    expect(await settled(c)).toBe(true);
    expect(budget.held()).toBe(70);
  });

  it("keeps only what was inflated after shrinkTo, and gives the rest to waiters", async () => {
    const budget = new InflationBudget(100);
    const a = await budget.acquire(100);
    const b = budget.acquire(50);
    a.shrinkTo(30);
    expect(await settled(b)).toBe(true);
    expect(budget.held()).toBe(80);
    a.release();
    a.release(); // a second release gives nothing back twice
    expect(budget.held()).toBe(50);
  });

  it("lets a reservation larger than the budget run alone, with the whole budget", async () => {
    const budget = new InflationBudget(100);
    const big = await budget.acquire(1_000);
    expect(budget.held()).toBe(100);
    const small = budget.acquire(1);
    expect(await settled(small)).toBe(false);
    big.release();
    expect(await settled(small)).toBe(true);
  });

  it("reserves nothing for nothing to inflate", async () => {
    const budget = new InflationBudget(10);
    await budget.acquire(10);
    expect(await settled(budget.acquire(0))).toBe(true);
  });
});

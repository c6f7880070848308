import { describe, expect, it } from "vitest";
import { TernError, isTernError } from "../common/errors.js";
import { AppliedWaiters, PendingProposals } from "./waiters.js";

function pending(
  list: PendingProposals<string>,
  index: number,
  term: number,
  deadlineMs = 1_000,
): Promise<string> {
  return new Promise((resolve, reject) => list.add({ index, term, deadlineMs, resolve, reject }));
}

describe("PendingProposals", () => {
  it("rejects exactly the proposals whose index now holds another term", async () => {
    const list = new PendingProposals<string>(10);
    const a = pending(list, 5, 2);
    const b = pending(list, 6, 2);
    const c = pending(list, 7, 2);
    // The new leader's log: index 5 kept (term 2), 6 overwritten (term 3), 7 not yet known.
    list.rejectOverwritten(
      (i) => (i === 5 ? 2 : i === 6 ? 3 : undefined),
      () => new TernError("NOT_LEADER_OR_FOLLOWER"),
    );
    await expect(b).rejects.toSatisfy((e) => isTernError(e, "NOT_LEADER_OR_FOLLOWER"));
    expect(list.size).toBe(2);
    list.take(5)!.resolve("five");
    await expect(a).resolves.toBe("five");
    list.expire(999);
    expect(list.size).toBe(1);
    list.expire(1_000);
    await expect(c).rejects.toSatisfy((e) => isTernError(e, "REQUEST_TIMED_OUT"));
    expect(list.size).toBe(0);
  });

  it("rejects up to a snapshot index and reports fullness", async () => {
    const list = new PendingProposals<string>(2);
    const a = pending(list, 1, 1);
    const b = pending(list, 3, 1);
    expect(list.full()).toBe(true);
    list.rejectUpTo(2, () => new Error("skipped"));
    await expect(a).rejects.toThrow("skipped");
    expect(list.full()).toBe(false);
    list.rejectAll(() => new Error("closing"));
    await expect(b).rejects.toThrow("closing");
  });
});

describe("AppliedWaiters", () => {
  it("releases waiters once the applied index reaches theirs, and times out the rest", async () => {
    const w = new AppliedWaiters(10);
    const order: number[] = [];
    const mk = (index: number, deadlineMs: number): Promise<void> =>
      new Promise((resolve, reject) =>
        w.add({
          index,
          deadlineMs,
          resolve: () => {
            order.push(index);
            resolve();
          },
          reject,
        }),
      );
    const p3 = mk(3, 100);
    const p9 = mk(9, 100);
    const p5 = mk(5, 100);
    w.release(5);
    await Promise.all([p3, p5]);
    expect(order.sort()).toEqual([3, 5]);
    expect(w.size).toBe(1);
    w.expire(100);
    await expect(p9).rejects.toSatisfy((e) => isTernError(e, "REQUEST_TIMED_OUT"));
  });
});

// PendingAdds: requests of one id that join before the writer takes the lock share one write;
// a request after that, or of another producer, gets a write of its own.
import { describe, expect, it } from "vitest";
import { PendingAdds, type TakePartitions } from "./pending-adds.js";

const tp = (partition: number) => ({ topic: "t", partition });

/** A write that waits until released, then records what it took. */
function gatedWrite(taken: number[][]): {
  write: (take: TakePartitions) => Promise<void>;
  release: () => void;
} {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  return {
    write: async (take) => {
      await gate;
      taken.push(take()!.map((p) => p.partition));
    },
    release: () => release(),
  };
}

describe("PendingAdds", () => {
  it("joins requests of the same producer into one write", async () => {
    const adds = new PendingAdds();
    const taken: number[][] = [];
    const first = gatedWrite(taken);
    const second = gatedWrite(taken);
    const a = adds.join("id", 1n, 0, [tp(0)], 10, first.write);
    const b = adds.join("id", 1n, 0, [tp(1), tp(0)], 10, second.write);
    const c = adds.join("id", 1n, 0, [tp(2)], 10, second.write);
    expect(adds.size).toBe(1);
    first.release();
    second.release();
    await Promise.all([a, b, c]);
    expect(taken).toEqual([[0, 1, 2]]);
    expect(adds.size).toBe(0);
  });

  it("a request after the writer took the batch opens the next one", async () => {
    const adds = new PendingAdds();
    const taken: number[][] = [];
    let takeFirst!: TakePartitions;
    let finishFirst!: () => void;
    const a = adds.join("id", 1n, 0, [tp(0)], 10, async (take) => {
      takeFirst = take;
      await new Promise<void>((r) => (finishFirst = r));
    });
    await Promise.resolve();
    taken.push(takeFirst()!.map((p) => p.partition));
    const later = gatedWrite(taken);
    const b = adds.join("id", 1n, 0, [tp(1)], 10, later.write);
    later.release();
    await b;
    finishFirst();
    await a;
    expect(taken).toEqual([[0], [1]]);
  });

  it("another producer, or a batch that would pass the bound, writes on its own", async () => {
    const adds = new PendingAdds();
    const taken: number[][] = [];
    const gates = [gatedWrite(taken), gatedWrite(taken), gatedWrite(taken)];
    const a = adds.join("id", 1n, 0, [tp(0), tp(1)], 3, gates[0]!.write);
    const b = adds.join("id", 1n, 1, [tp(2)], 3, gates[1]!.write);
    const c = adds.join("id", 1n, 0, [tp(3), tp(4)], 3, gates[2]!.write);
    for (const g of gates) g.release();
    await Promise.all([a, b, c]);
    expect(taken.sort()).toEqual([[0, 1], [2], [3, 4]]);
  });

  it("every joiner gets the write's failure", async () => {
    const adds = new PendingAdds();
    let fail!: (e: Error) => void;
    const a = adds.join("id", 1n, 0, [tp(0)], 10, () => new Promise((_, r) => (fail = r)));
    const b = adds.join("id", 1n, 0, [tp(1)], 10, () => Promise.resolve());
    fail(new Error("NOT_COORDINATOR"));
    await expect(a).rejects.toThrow("NOT_COORDINATOR");
    await expect(b).rejects.toThrow("NOT_COORDINATOR");
    expect(adds.size).toBe(0);
  });

  it("a claim takes the open batch of that producer; its own write then finds nothing to write", async () => {
    const adds = new PendingAdds();
    let ownTake: TakePartitions | undefined;
    let runOwn!: () => void;
    const a = adds.join("id", 1n, 0, [tp(0)], 10, async (take) => {
      await new Promise<void>((r) => (runOwn = r));
      ownTake = take;
    });
    const b = adds.join("id", 1n, 0, [tp(1)], 10, () => Promise.resolve());
    expect(adds.claim("id", 1n, 1)).toBeUndefined();
    const claimed = adds.claim("id", 1n, 0)!;
    expect(claimed.partitions.map((p) => p.partition)).toEqual([0, 1]);
    expect(adds.size).toBe(0);
    claimed.settle();
    await Promise.all([a, b]);
    runOwn();
    await Promise.resolve();
    expect(ownTake!()).toBeUndefined();
  });
});

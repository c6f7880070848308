// The fetch session cache (KIP-227) on its own, with a hand-moved clock: sessions made by full
// fetches with epoch 0, incremental fetches at the session's epoch (a wrong epoch or another
// connection's id refused), forgotten partitions, what an incremental answer must carry, the
// per-connection bound, and Kafka's eviction rule when the cache is full.
import { describe, expect, it } from "vitest";
import {
  EVICTION_MS,
  FETCH_SESSION_ID_NOT_FOUND,
  FetchSessionCache,
  INVALID_FETCH_SESSION_EPOCH,
  newSessionOwner,
  SESSIONS_PER_CONNECTION_MAX,
  type FetchContext,
  type FetchPartition,
  type FetchSession,
} from "./fetch-sessions.js";

const part = (partition: number, fetchOffset = 0n, topic = "t"): FetchPartition => ({
  topic,
  partition,
  fetchOffset,
  maxBytes: 1 << 20,
  currentLeaderEpoch: -1,
});

const parts = (n: number): FetchPartition[] => Array.from({ length: n }, (_, i) => part(i));

function sessionOf(c: FetchContext): FetchSession {
  if (c.kind === "error" || c.session === undefined) throw new Error(`no session: ${c.kind}`);
  return c.session;
}

const quiet = {
  error: 0,
  highWatermark: 10n,
  lastStableOffset: 10n,
  logStartOffset: 0n,
  hasRecords: false,
};

describe("fetch session cache", () => {
  it("makes a session on a full fetch with epoch 0 and follows its epochs", () => {
    const cache = new FetchSessionCache(10, () => 0);
    const owner = newSessionOwner();
    const full = cache.begin(owner, {
      sessionId: 0,
      epoch: 0,
      partitions: parts(2),
      forgotten: [],
    });
    expect(full.kind).toBe("full");
    const s = sessionOf(full);
    expect(s.id).toBeGreaterThan(0);
    const inc = cache.begin(owner, {
      sessionId: s.id,
      epoch: 1,
      partitions: [part(1, 5n)],
      forgotten: [{ topic: "t", partition: 0 }],
    });
    expect(inc.kind).toBe("incremental");
    expect(inc.kind !== "error" && inc.partitions).toEqual([part(1, 5n)]);
    // The same epoch again: refused; the next one is 2.
    expect(
      cache.begin(owner, { sessionId: s.id, epoch: 1, partitions: [], forgotten: [] }),
    ).toEqual({ kind: "error", error: INVALID_FETCH_SESSION_EPOCH });
    expect(
      cache.begin(owner, { sessionId: s.id, epoch: 2, partitions: [], forgotten: [] }).kind,
    ).toBe("incremental");
    // Epoch -1 closes it: a sessionless full fetch, and the id is gone.
    const closing = cache.begin(owner, {
      sessionId: s.id,
      epoch: -1,
      partitions: parts(1),
      forgotten: [],
    });
    expect(closing).toEqual({ kind: "full", partitions: parts(1), session: undefined });
    expect(cache.size).toBe(0);
    expect(
      cache.begin(owner, { sessionId: s.id, epoch: 3, partitions: [], forgotten: [] }),
    ).toEqual({
      kind: "error",
      error: FETCH_SESSION_ID_NOT_FOUND,
    });
  });

  it("answers an incremental fetch only with partitions that have records, an error or new offsets", () => {
    const cache = new FetchSessionCache(10, () => 0);
    const owner = newSessionOwner();
    const s = sessionOf(
      cache.begin(owner, { sessionId: 0, epoch: 0, partitions: parts(3), forgotten: [] }),
    );
    for (const p of parts(3)) expect(s.answered(p, quiet)).toBe(true); // first answers: all new
    expect(s.answered(part(0), quiet)).toBe(false);
    expect(s.answered(part(1), { ...quiet, highWatermark: 11n })).toBe(true);
    expect(s.answered(part(1), { ...quiet, highWatermark: 11n, lastStableOffset: 11n })).toBe(true);
    expect(s.answered(part(1), { ...quiet, highWatermark: 11n, lastStableOffset: 11n })).toBe(
      false,
    );
    expect(s.answered(part(2), { ...quiet, logStartOffset: 4n })).toBe(true);
    expect(s.answered(part(0), { ...quiet, error: 6 })).toBe(true);
    // After an error the partition is answered again once it clears.
    expect(s.answered(part(0), quiet)).toBe(true);
    // Records move a partition to the back of the session.
    expect(s.answered(part(0), { ...quiet, hasRecords: true })).toBe(true);
    const next = cache.begin(owner, { sessionId: s.id, epoch: 1, partitions: [], forgotten: [] });
    expect(next.kind !== "error" && next.partitions.map((p) => p.partition)).toEqual([1, 2, 0]);
  });

  it("keeps a session to its connection, which holds a bounded number and loses them when it closes", () => {
    const cache = new FetchSessionCache(100, () => 0);
    const a = newSessionOwner();
    const b = newSessionOwner();
    const s = sessionOf(
      cache.begin(a, { sessionId: 0, epoch: 0, partitions: parts(1), forgotten: [] }),
    );
    expect(cache.begin(b, { sessionId: s.id, epoch: 1, partitions: [], forgotten: [] })).toEqual({
      kind: "error",
      error: FETCH_SESSION_ID_NOT_FOUND,
    });
    // Another connection's full fetch naming the id does not close it.
    cache.begin(b, { sessionId: s.id, epoch: -1, partitions: [], forgotten: [] });
    expect(cache.size).toBe(1);
    for (let i = 1; i < SESSIONS_PER_CONNECTION_MAX + 3; i++)
      cache.begin(a, { sessionId: 0, epoch: 0, partitions: parts(1), forgotten: [] });
    expect(a.sessions.size).toBe(SESSIONS_PER_CONNECTION_MAX);
    expect(cache.size).toBe(SESSIONS_PER_CONNECTION_MAX);
    cache.closeOwner(a);
    expect(cache.size).toBe(0);
  });

  it("evicts as Kafka does when full: a stale session, else an older smaller one for a larger one", () => {
    let now = 0;
    const cache = new FetchSessionCache(2, () => now);
    const owners = [newSessionOwner(), newSessionOwner(), newSessionOwner(), newSessionOwner()];
    const made = (i: number, n: number): number | undefined => {
      const c = cache.begin(owners[i]!, {
        sessionId: 0,
        epoch: 0,
        partitions: parts(n),
        forgotten: [],
      });
      return c.kind === "error" ? undefined : c.session?.id;
    };
    const first = made(0, 2)!;
    now = 1_000;
    const second = made(1, 5)!;
    expect(cache.size).toBe(2);
    // Full, every session young: none is evicted, the fetch goes on without a session.
    expect(made(2, 10)).toBeUndefined();
    expect(cache.evicted).toBe(0);
    // Both older than the eviction time, both used recently: only a larger session evicts the smallest.
    now = EVICTION_MS + 2_000;
    cache.begin(owners[0]!, { sessionId: first, epoch: 1, partitions: [], forgotten: [] });
    cache.begin(owners[1]!, { sessionId: second, epoch: 1, partitions: [], forgotten: [] });
    expect(made(2, 2)).toBeUndefined(); // not larger than the smallest (2)
    const third = made(2, 3)!;
    expect(third).toBeDefined();
    expect(cache.evicted).toBe(1);
    expect(
      cache.begin(owners[0]!, { sessionId: first, epoch: 2, partitions: [], forgotten: [] }),
    ).toEqual({
      kind: "error",
      error: FETCH_SESSION_ID_NOT_FOUND,
    });
    // A session idle longer than the eviction time goes for any newcomer, even a smaller one.
    now += EVICTION_MS + 1;
    cache.begin(owners[2]!, { sessionId: third, epoch: 1, partitions: [], forgotten: [] });
    expect(made(3, 1)).toBeDefined();
    expect(cache.evicted).toBe(2);
    expect(
      cache.begin(owners[1]!, { sessionId: second, epoch: 2, partitions: [], forgotten: [] }).kind,
    ).toBe("error");
  });

  it("makes no session with no slots", () => {
    const cache = new FetchSessionCache(0, () => 0);
    expect(
      cache.begin(newSessionOwner(), {
        sessionId: 0,
        epoch: 0,
        partitions: parts(1),
        forgotten: [],
      }),
    ).toEqual({ kind: "full", partitions: parts(1), session: undefined });
  });
});

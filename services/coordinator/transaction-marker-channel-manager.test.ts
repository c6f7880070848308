import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../libs/runtime/testing/manual-clock.js";
import { silentLogger } from "../../libs/common/logger.js";
import { SeededRandom } from "../../libs/common/prng.js";
import { Registry } from "prom-client";
import { drive, runFor, runUntil } from "../../libs/common/testing/virtual-time.js";
import {
  classifyMarkerError,
  TransactionMarkerChannelManager,
  type MarkerTransport,
  type WireTxnMarker,
} from "./transaction-marker-channel-manager.js";

const managers: TransactionMarkerChannelManager[] = [];
afterEach(() => {
  for (const m of managers.splice(0)) m.close();
});
/** The backoff timers run on this clock; each test's waits move it (no real sleeps). */
let clock = new ManualClock();
afterEach(() => {
  clock = new ManualClock();
});
/** Steps of the backoff cap: the partitions of one failed request retry together, in one request. */
const STEP = { stepMs: 10 };

function manager(
  transport: MarkerTransport,
  leaderOf = (_: { topic: string; partition: number }) =>
    ({ address: "b0" }) as { address: string } | "no-leader" | "no-topic",
  metrics?: Registry,
) {
  const m = new TransactionMarkerChannelManager({
    transport,
    leaderOf,
    confirmGone: async (tp) => tp.topic === "gone",
    logger: silentLogger(),
    random: new SeededRandom(1),
    scheduler: clock,
    backoffInitialMs: 2,
    backoffMaxMs: 10,
    ...(metrics ? { metrics } : {}),
  });
  managers.push(m);
  return m;
}

const job = (partitions: Array<[string, number]>, id = "t") => ({
  transactionalId: id,
  producerId: 5n,
  producerEpoch: 3,
  coordinatorEpoch: 7,
  commit: true,
  epochBumped: true,
  partitions: partitions.map(([topic, partition]) => ({ topic, partition })),
});

/** Answers each partition with the next code scripted for it (NONE once the script is used up). */
function scripted(script: Record<string, string[]>, log: WireTxnMarker[][] = []): MarkerTransport {
  return async (_address, markers) => {
    log.push(markers);
    return {
      results: markers.map((m) => ({
        producerId: m.producerId,
        partitions: m.partitions.map((p) => ({
          topicPartition: p,
          errorCode: script[`${p.topic}/${p.partition}`]?.shift() ?? "NONE",
          errorMessage: "",
        })),
      })),
    };
  };
}

describe("TransactionMarkerChannelManager", () => {
  it("classifies results into retriable / fenced / fatal", () => {
    expect(classifyMarkerError("NONE")).toBe("acked");
    expect(classifyMarkerError("NOT_LEADER_OR_FOLLOWER")).toBe("retriable");
    expect(classifyMarkerError("TRANSACTION_COORDINATOR_FENCED")).toBe("fenced");
    expect(classifyMarkerError("CORRUPT_MESSAGE")).toBe("fatal");
  });

  it("batches the partitions of concurrent transactions into one request per broker, with the coordinator epoch", async () => {
    const log: WireTxnMarker[][] = [];
    const m = manager(scripted({}, log));
    const c = new AbortController();
    const outcomes = await Promise.all([
      m.send(
        job(
          [
            ["a", 0],
            ["a", 1],
          ],
          "t1",
        ),
        c.signal,
      ),
      m.send(job([["b", 0]], "t2"), c.signal),
    ]);
    expect(outcomes).toEqual(["done", "done"]);
    expect(log).toHaveLength(1);
    expect(
      log[0]!.map((x) => [
        x.transactionalId,
        x.partitions.length,
        x.coordinatorEpoch,
        x.producerEpoch,
        x.controlType,
      ]),
    ).toEqual([
      ["t1", 2, 7, 3, "COMMIT"],
      ["t2", 1, 7, 3, "COMMIT"],
    ]);
  });

  it("retries retriable results and whole-request failures until every partition acknowledged", async () => {
    let failures = 2;
    const inner = scripted({ "a/1": ["NOT_LEADER_OR_FOLLOWER", "REQUEST_TIMED_OUT"] });
    const registry = new Registry();
    const m = manager(
      async (address, markers, t) => {
        if (failures-- > 0) throw Object.assign(new Error("unavailable"), { code: 14 });
        return inner(address, markers, t);
      },
      undefined,
      registry,
    );
    const c = new AbortController();
    const pending = m.send(
      job([
        ["a", 0],
        ["a", 1],
      ]),
      c.signal,
    );
    expect(m.pendingPartitions("t")).toHaveLength(2);
    expect(await drive(clock, pending, STEP)).toBe("done");
    expect(m.pendingPartitions("t")).toBeUndefined();
    // Both partitions in each of the two failed requests, and a/1's two scripted errors; each
    // partition is acknowledged once.
    const results = await registry.getSingleMetricAsString(
      "tern_txn_marker_partition_results_total",
    );
    expect(results).toMatch(/bucket="retriable"} 6/);
    expect(results).toMatch(/bucket="acked"} 2(\n|$)/);
  });

  it("waits for a leader, and skips partitions of deleted topics", async () => {
    let leaderKnown = false;
    const m = manager(scripted({}), (tp) =>
      tp.topic === "gone" ? "no-topic" : leaderKnown ? { address: "b1" } : "no-leader",
    );
    const c = new AbortController();
    const pending = m.send(
      job([
        ["a", 0],
        ["gone", 0],
      ]),
      c.signal,
    );
    await runFor(clock, 20);
    expect(m.pendingPartitions("t")).toEqual([{ topic: "a", partition: 0 }]);
    leaderKnown = true;
    expect(await drive(clock, pending)).toBe("done");
  });

  it("never skips a partition its stale view lacks unless the controller confirms it is gone", async () => {
    // A new topic the local view has not seen yet: absent from the view, present at the controller.
    let inView = false;
    const written: string[] = [];
    const transport: MarkerTransport = async (_a, markers) => {
      for (const mk of markers)
        for (const p of mk.partitions) written.push(`${p.topic}/${p.partition}`);
      return scripted({})(_a, markers, 0);
    };
    const checks: string[] = [];
    const m = new TransactionMarkerChannelManager({
      transport,
      leaderOf: (tp) => (inView || tp.topic !== "fresh" ? { address: "b0" } : "no-topic"),
      confirmGone: async (tp) => {
        checks.push(tp.topic);
        return false;
      },
      logger: silentLogger(),
      random: new SeededRandom(1),
      scheduler: clock,
      backoffInitialMs: 2,
      backoffMaxMs: 10,
    });
    managers.push(m);
    const pending = m.send(job([["fresh", 0]]), new AbortController().signal);
    await runUntil(clock, "a second check", () => checks.length > 1);
    expect(m.pendingPartitions("t")).toEqual([{ topic: "fresh", partition: 0 }]);
    expect(written).toEqual([]);
    inView = true;
    expect(await drive(clock, pending)).toBe("done");
    expect(written).toEqual(["fresh/0"]);
  });

  it("drops a fenced transaction and stops on cancellation", async () => {
    const m = manager(scripted({ "a/0": ["TRANSACTION_COORDINATOR_FENCED"] }));
    expect(
      await m.send(
        job([
          ["a", 0],
          ["a", 1],
        ]),
        new AbortController().signal,
      ),
    ).toBe("fenced");
    const never = manager(async () => {
      throw Object.assign(new Error("down"), { code: 14 });
    });
    const c = new AbortController();
    const pending = never.send(job([["a", 0]]), c.signal);
    clock.setTimeout(() => c.abort(), 20);
    expect(await drive(clock, pending)).toBe("cancelled");
  });
});

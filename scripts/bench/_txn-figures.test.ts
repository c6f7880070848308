import { describe, expect, it } from "vitest";
import {
  combineProduce,
  fastest,
  fetchAnomalies,
  overheadPct,
  pacedFigures,
  ratePerS,
  txnFigures,
  type ProducePhase,
  type TxnMeasurements,
} from "./_txn-figures.js";
import type { FetchResult } from "./_txn-job.js";

const settings = {
  durationS: 15,
  partitions: 3,
  recordBytes: 1024,
  batchBytes: 65_536,
  commitIntervalMs: 100,
  maxInFlight: 1,
};

function produced(
  records: number,
  elapsedS: number,
  extra: Partial<ProducePhase> = {},
): ProducePhase {
  return {
    cpuMsByRole: { controller: 0, broker: records * 2, coordinator: 0 },
    kind: "produce",
    records,
    bytes: records * 1024,
    warmupRecords: 1,
    elapsedS,
    failedRecords: 0,
    commits: 0,
    aborts: 0,
    commitLatenciesMs: [],
    ...extra,
  };
}

function read(records: number, elapsedS: number, complete = true): FetchResult {
  return {
    kind: "fetch",
    records,
    bytes: records * 1024,
    elapsedS,
    endOffsetSum: String(records + 10),
    complete,
  };
}

function measurements(): TxnMeasurements {
  return {
    idempotent: [produced(12_000, 5), produced(8_000, 5)],
    transactional: [
      produced(7_000, 5, {
        commits: 45,
        commitLatenciesMs: [40, 12.345, 10],
        cpuMsByRole: { controller: 0, broker: 14_000, coordinator: 900 },
      }),
      produced(8_000, 5, {
        commits: 45,
        warmupRecords: 1,
        commitLatenciesMs: [11, 13],
        cpuMsByRole: { controller: 0, broker: 16_000, coordinator: 900 },
      }),
    ],
    readUncommitted: [read(35_004, 2), read(35_004, 1)],
    readCommitted: [read(35_004, 2.5), read(35_004, 4)],
  };
}

describe("overheadPct", () => {
  it("is the slowdown in percent of the baseline, negative when faster, 0 without a baseline", () => {
    expect(overheadPct(2000, 1500)).toBe(25);
    expect(overheadPct(1000, 1100)).toBeCloseTo(-10);
    expect(overheadPct(0, 5)).toBe(0);
  });
});

describe("ratePerS and fastest", () => {
  it("a rate over no time is 0; the fastest read wins", () => {
    expect(ratePerS(10, 0)).toBe(0);
    expect(fastest([read(100, 2), read(100, 1), read(100, 3)]).elapsedS).toBe(1);
    expect(() => fastest([])).toThrow();
  });
});

describe("combineProduce", () => {
  it("adds counts and times and pools the latency samples", () => {
    const c = combineProduce(measurements().transactional);
    expect(c.records).toBe(15_000);
    expect(c.elapsedS).toBe(10);
    expect(c.warmupRecords).toBe(2);
    expect(c.commitLatenciesMs).toHaveLength(5);
    expect(() => combineProduce([])).toThrow();
  });
});

describe("txnFigures", () => {
  const figures = txnFigures(measurements(), settings);
  const find = (kase: string, metric: string) =>
    figures.find((f) => f.case === kase && f.metric === metric);

  it("prints records_per_s and mb_per_s for every case, in the CONVENTIONS.md shape", () => {
    for (const kase of [
      "produce-idempotent",
      "produce-transactional",
      "fetch-read_uncommitted",
      "fetch-read_committed",
    ]) {
      expect(find(kase, "records_per_s")?.unit).toBe("1/s");
      expect(find(kase, "mb_per_s")?.unit).toBe("MB/s");
    }
    for (const f of figures) {
      expect(f.bench).toBe("txn");
      expect(f.metric).toMatch(/^[a-z0-9_]+$/);
      expect(Number.isFinite(f.value)).toBe(true);
      expect(JSON.parse(JSON.stringify(f))).toEqual(f);
    }
  });

  it("computes the rates and both overheads from the measurements", () => {
    expect(find("produce-idempotent", "records_per_s")?.value).toBe(2000);
    expect(find("produce-transactional", "records_per_s")?.value).toBe(1500);
    expect(find("produce-transactional", "mb_per_s")?.value).toBe(1.54);
    // pooled samples 10, 11, 12.345, 13, 40: p50 is the third
    expect(find("produce-transactional", "commit_latency_p50")?.value).toBe(12.35);
    expect(find("produce-transactional", "commit_latency_p99")?.value).toBe(40);
    expect(find("produce-transactional", "records_per_s")?.commits).toBe(90);
    expect(find("produce-transactional-vs-idempotent", "overhead_pct")?.value).toBe(25);
    // fastest reads: 35004/1 s uncommitted, 35004/2.5 s committed -> 60 % slower
    expect(find("fetch-read_uncommitted", "records_per_s")?.value).toBe(35_004);
    expect(find("fetch-read_committed", "records_per_s")?.value).toBe(14_001.6);
    expect(find("fetch-read_committed-vs-read_uncommitted", "overhead_pct")?.value).toBe(60);
    expect(find("fetch-read_committed", "records_per_s")?.records_per_s_samples).toEqual([
      14_001.6, 8751,
    ]);
  });

  it("reports the cluster's CPU per MB and cores busy per produce case", () => {
    // 20,000 records (20.48 MB) for 40 s of CPU over 10 s; 15,000 for 31.8 s over 10 s.
    expect(find("produce-idempotent", "cluster_cpu_ms_per_mb")?.value).toBe(1953.13);
    expect(find("produce-idempotent", "cluster_cores_busy")?.value).toBe(4);
    expect(find("produce-transactional", "cluster_cpu_ms_per_mb")?.value).toBe(2070.31);
    expect(find("produce-transactional", "cluster_cores_busy")?.value).toBe(3.18);
  });

  it("charges each commit the CPU beyond what as many idempotent bytes cost, per role", () => {
    // Brokers spent the same per byte in both cases; coordinators 1,800 ms for 90 commits.
    const perCommit = find("produce-transactional", "cluster_cpu_ms_per_commit");
    expect(perCommit?.value).toBe(20);
    expect(perCommit?.broker_ms).toBe(0);
    expect(perCommit?.coordinator_ms).toBe(20);
    expect(perCommit?.controller_ms).toBe(0);
  });
});

describe("pacedFigures", () => {
  const paced = {
    idleS: 5,
    // Idle: 100, 50 and 40 ms/s; over the 10 s run that is 1000, 500 and 400 ms.
    idleCpuMsByRole: { controller: 500, broker: 250, coordinator: 200 },
    run: {
      kind: "paced" as const,
      commits: 100,
      aborts: 1,
      elapsedS: 10,
      transactionLatenciesMs: [30, 10, 20],
    },
    transactionsPerS: 10,
    cpuMsByRole: { controller: 1100, broker: 2500, coordinator: 2400 },
  };

  it("charges each paced transaction the CPU beyond the idle cluster's, per role", () => {
    const [cpu, latency] = pacedFigures(paced, settings);
    expect(cpu).toMatchObject({
      case: "paced-transactions",
      metric: "cluster_cpu_ms_per_txn",
      value: 41,
      controller_ms: 1,
      broker_ms: 20,
      coordinator_ms: 20,
      commits: 100,
      records_per_txn: 3,
    });
    expect(latency).toMatchObject({ metric: "txn_latency_p50", value: 20, unit: "ms" });
  });

  it("prints nothing when no paced transaction committed", () => {
    expect(pacedFigures({ ...paced, run: { ...paced.run, commits: 0 } }, settings)).toEqual([]);
  });
});

describe("fetchAnomalies", () => {
  it("is empty when read_committed returns exactly the idempotent and committed records (warm-ups included)", () => {
    expect(fetchAnomalies(measurements())).toEqual([]);
  });

  it("allows each failed idempotent send to be there or not", () => {
    const m = measurements();
    const failed = {
      ...m,
      idempotent: [produced(12_000, 5, { failedRecords: 2 }), produced(8_000, 5)],
    };
    expect(fetchAnomalies({ ...failed, readCommitted: [read(35_006, 1)] })).toEqual([]);
    expect(fetchAnomalies({ ...failed, readCommitted: [read(35_007, 1)] })).toEqual([
      "read_committed returned 35007 records, expected 35004 to 35006",
    ]);
  });

  it("flags a read_committed count that differs from what was committed, and incomplete reads", () => {
    const m = measurements();
    const bad = {
      ...m,
      readCommitted: [read(35_005, 1)],
      readUncommitted: [read(34_000, 1, false)],
    };
    const anomalies = fetchAnomalies(bad);
    expect(anomalies.some((a) => a.includes("read_committed returned 35005"))).toBe(true);
    expect(anomalies.some((a) => a.includes("fewer than the 35004"))).toBe(true);
    expect(anomalies.some((a) => a.includes("stopped before the high watermark"))).toBe(true);
  });
});

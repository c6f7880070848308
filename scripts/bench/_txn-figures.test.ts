import { describe, expect, it } from "vitest";
import {
  combineProduce,
  fastest,
  fetchAnomalies,
  overheadPct,
  ratePerS,
  txnFigures,
  type TxnMeasurements,
} from "./_txn-figures.js";
import type { FetchResult, ProduceResult } from "./_txn-job.js";

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
  extra: Partial<ProduceResult> = {},
): ProduceResult {
  return {
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
      produced(7_000, 5, { commits: 45, commitLatenciesMs: [40, 12.345, 10] }),
      produced(8_000, 5, { commits: 45, warmupRecords: 1, commitLatenciesMs: [11, 13] }),
    ],
    readUncommitted: [read(15_002, 2), read(15_002, 1)],
    readCommitted: [read(15_002, 2.5), read(15_002, 4)],
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
    // fastest reads: 15002/1 s uncommitted, 15002/2.5 s committed -> 60 % slower
    expect(find("fetch-read_uncommitted", "records_per_s")?.value).toBe(15_002);
    expect(find("fetch-read_committed", "records_per_s")?.value).toBe(6000.8);
    expect(find("fetch-read_committed-vs-read_uncommitted", "overhead_pct")?.value).toBe(60);
    expect(find("fetch-read_committed", "records_per_s")?.records_per_s_samples).toEqual([
      6000.8, 3750.5,
    ]);
  });
});

describe("fetchAnomalies", () => {
  it("is empty when read_committed returns exactly the committed records (warm-ups of both runs included)", () => {
    expect(fetchAnomalies(measurements())).toEqual([]);
  });

  it("flags a read_committed count that differs from what was committed, and incomplete reads", () => {
    const m = measurements();
    const bad = {
      ...m,
      readCommitted: [read(15_003, 1)],
      readUncommitted: [read(14_000, 1, false)],
    };
    const anomalies = fetchAnomalies(bad);
    expect(anomalies.some((a) => a.includes("read_committed returned 15003"))).toBe(true);
    expect(anomalies.some((a) => a.includes("fewer than the 15002"))).toBe(true);
    expect(anomalies.some((a) => a.includes("stopped before the high watermark"))).toBe(true);
  });
});

import { describe, expect, it } from "vitest";
import { fastest, fetchAnomalies, overheadPct, ratePerS, txnFigures, type TxnMeasurements } from "./_txn-figures.js";
import type { FetchResult, ProduceResult } from "./_txn-job.js";

const settings = { durationS: 15, partitions: 3, recordBytes: 1024, batchBytes: 65_536, commitIntervalMs: 100, maxInFlight: 1 };

function produced(records: number, elapsedS: number, extra: Partial<ProduceResult> = {}): ProduceResult {
  return { kind: "produce", records, bytes: records * 1024, warmupRecords: 1, elapsedS, failedRecords: 0, commits: 0, aborts: 0, commitLatencyMsP50: 0, commitLatencyMsP99: 0, ...extra };
}

function read(records: number, elapsedS: number, complete = true): FetchResult {
  return { kind: "fetch", records, bytes: records * 1024, elapsedS, endOffsetSum: String(records + 10), complete };
}

function measurements(): TxnMeasurements {
  return {
    idempotent: produced(20_000, 10),
    transactional: produced(15_000, 10, { commits: 90, commitLatencyMsP50: 12.345, commitLatencyMsP99: 40 }),
    readUncommitted: [read(15_001, 2), read(15_001, 1)],
    readCommitted: [read(15_001, 2.5), read(15_001, 4)],
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

describe("txnFigures", () => {
  const figures = txnFigures(measurements(), settings);
  const find = (kase: string, metric: string) => figures.find((f) => f.case === kase && f.metric === metric);

  it("prints records_per_s and mb_per_s for every case, in the CONVENTIONS.md shape", () => {
    for (const kase of ["produce-idempotent", "produce-transactional", "fetch-read_uncommitted", "fetch-read_committed"]) {
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
    expect(find("produce-transactional", "commit_latency_p50")?.value).toBe(12.35);
    expect(find("produce-transactional-vs-idempotent", "overhead_pct")?.value).toBe(25);
    // fastest reads: 15001/1 s uncommitted, 15001/2.5 s committed -> 60 % slower
    expect(find("fetch-read_uncommitted", "records_per_s")?.value).toBe(15_001);
    expect(find("fetch-read_committed", "records_per_s")?.value).toBe(6000.4);
    expect(find("fetch-read_committed-vs-read_uncommitted", "overhead_pct")?.value).toBe(60);
    expect(find("fetch-read_committed", "records_per_s")?.records_per_s_samples).toEqual([6000.4, 3750.25]);
  });
});

describe("fetchAnomalies", () => {
  it("is empty when read_committed returns exactly the committed records (warm-up included)", () => {
    expect(fetchAnomalies(measurements())).toEqual([]);
  });

  it("flags a read_committed count that differs from what was committed, and incomplete reads", () => {
    const m = measurements();
    const bad = { ...m, readCommitted: [read(15_002, 1)], readUncommitted: [read(14_000, 1, false)] };
    const anomalies = fetchAnomalies(bad);
    expect(anomalies.some((a) => a.includes("read_committed returned 15002"))).toBe(true);
    expect(anomalies.some((a) => a.includes("fewer than the 15001"))).toBe(true);
    expect(anomalies.some((a) => a.includes("stopped before the high watermark"))).toBe(true);
  });
});

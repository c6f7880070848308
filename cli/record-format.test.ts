// The consume format string, JSON lines, start positions and the perf summary.
import { describe, expect, it } from "vitest";
import { checkFormat, formatRecord, recordJson } from "./record-format.js";
import { parseStart } from "./commands/consume.js";
import { LatencyRecorder, formatSummary } from "./latency-summary.js";

const record = {
  topic: "t",
  partition: 2,
  offset: 41n,
  key: Buffer.from("k1"),
  value: Buffer.from("hello"),
  headers: { a: Buffer.from("1"), b: Buffer.from("x") },
  timestampMs: 1_700_000_000_000,
};

describe("formatRecord", () => {
  it("expands every directive and escape", () => {
    expect(formatRecord("%t/%p@%o %k=%s %T [%h] %K %S 100%%\\t.", record)).toBe(
      "t/2@41 k1=hello 1700000000000 [a=1,b=x] 2 5 100%\t.",
    );
    expect(formatRecord("%k|%s|%K|%S", { ...record, key: null, value: null })).toBe("||-1|-1");
  });
  it("refuses an unknown directive before reading anything", () => {
    expect(() => checkFormat("%s %z")).toThrow(/unknown directive %z/);
    expect(() => checkFormat("trailing %")).toThrow(/unknown directive %/);
    expect(() => checkFormat("%t %p %o %k %s %T %h %K %S %%")).not.toThrow();
  });
  it("JSON lines carry topic, headers and timestamp", () => {
    expect(JSON.parse(recordJson(record))).toEqual({
      topic: "t",
      partition: 2,
      offset: "41",
      key: "k1",
      value: "hello",
      headers: { a: "1", b: "x" },
      timestampMs: 1_700_000_000_000,
    });
  });
});

describe("parseStart", () => {
  it("reads N, -N, beginning, end, a timestamp in ms or ISO", () => {
    expect(parseStart({ offset: "12" })).toEqual({ kind: "absolute", offset: 12n });
    expect(parseStart({ offset: "-5" })).toEqual({ kind: "fromEnd", count: 5n });
    expect(parseStart({ offset: "beginning" })).toEqual({ kind: "beginning" });
    expect(parseStart({ offset: "end" })).toEqual({ kind: "end" });
    expect(parseStart({ fromTimestamp: "1000" })).toEqual({ kind: "timestamp", ms: 1000 });
    expect(parseStart({ fromTimestamp: "1970-01-01T00:00:02Z" })).toEqual({
      kind: "timestamp",
      ms: 2000,
    });
    expect(parseStart({})).toEqual({ kind: "default" });
  });
  it("refuses junk and more than one start", () => {
    expect(() => parseStart({ offset: "x" })).toThrow(/--offset/);
    expect(() => parseStart({ fromTimestamp: "soon" })).toThrow(/--from-timestamp/);
    expect(() => parseStart({ fromBeginning: true, offset: "1" })).toThrow(/at most one/);
  });
});

describe("LatencyRecorder", () => {
  it("summarises throughput and percentiles", () => {
    const r = new LatencyRecorder();
    for (let i = 1; i <= 1000; i++) r.record(i, 1024);
    const s = r.summary(2_000);
    expect(s).toMatchObject({
      records: 1000,
      recordsPerS: 500,
      latencyP50Ms: 501,
      latencyP99Ms: 991,
      latencyMaxMs: 1000,
      latencyAvgMs: 500.5,
    });
    expect(formatSummary(s)).toMatch(
      /^1000 records sent, 500 records\/sec \(0\.49 MB\/sec\), 500\.5 ms avg latency, 1000 ms max latency, 501 ms 50th, 951 ms 95th, 991 ms 99th, 1000 ms 99\.9th\.$/,
    );
  });
});

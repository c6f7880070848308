import { describe, expect, it } from "vitest";
import { byGroup, cpuMs, parseMetrics, rssMiB, sumOf } from "./_storage-probes.js";

const TEXT = `# HELP tern_raft_fsyncs_total level batches written with sync (fsync)
# TYPE tern_raft_fsyncs_total counter
tern_raft_fsyncs_total{role="broker",node_id="1"} 722
tern_storage_fsyncs_total{role="broker",node_id="1"} 8
tern_raft_applied_index{group="bench-storage/0",role="broker",node_id="1"} 1234
tern_raft_applied_index{group="a \\"quoted\\" name",role="broker",node_id="1"} 5
process_resident_memory_bytes 9.5e7
`;

describe("parseMetrics", () => {
  it("reads samples with labels and skips comments", () => {
    const s = parseMetrics(TEXT);
    expect(s).toHaveLength(5);
    expect(sumOf(s, (n) => n.endsWith("fsyncs_total"))).toBe(730);
    expect(sumOf(s, (n) => n === "absent")).toBeUndefined();
    expect(byGroup(s, "tern_raft_applied_index")).toEqual(
      new Map([
        ["bench-storage/0", 1234],
        ['a "quoted" name', 5],
      ]),
    );
    expect(s.find((x) => x.name === "process_resident_memory_bytes")?.value).toBe(9.5e7);
  });
});

describe("/proc readings", () => {
  it("reads this process's RSS and CPU time, and nothing for a pid that does not exist", () => {
    if (process.platform !== "linux") return;
    expect(rssMiB(process.pid)).toBeGreaterThan(1);
    expect(cpuMs(process.pid)).toBeGreaterThanOrEqual(0);
    expect(rssMiB(2 ** 22 + 1)).toBeUndefined();
  });
});

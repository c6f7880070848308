import { describe, expect, it } from "vitest";
import { peerTable, type PeerLine } from "./_peer-table.js";

const line = (over: Partial<PeerLine>): PeerLine => ({
  case: "produce-6-partitions-1kib",
  metric: "records_per_s",
  value: 1,
  unit: "1/s",
  system: "kafka",
  client: "java",
  variant: "flush-default",
  version: "4.4.0",
  ...over,
});

describe("peerTable", () => {
  it("puts storage variants in columns, Kafka's first, and workload settings in rows", () => {
    const table = peerTable([
      line({ system: "tern", version: "0.1.0", variant: "fsync-every-commit", value: 30 }),
      line({ value: 40 }),
      line({ variant: "flush-every-message", value: 20 }),
      line({
        case: "txn-6-partitions",
        metric: "overhead_pct",
        unit: "%",
        variant: "commit-every-100ms",
        value: 5,
      }),
      line({
        system: "tern",
        version: "0.1.0",
        client: "grpc",
        variant: "fsync-every-commit",
        value: 35,
      }),
    ]).split("\n");
    expect(table[0]).toBe(
      "| figure | Kafka 4.4.0 (Java client, default flush) | Kafka 4.4.0 (Java client, flush.messages=1) | Kafka 4.4.0 (Java client) | tern 0.1.0 (Java client) | tern 0.1.0 (gRPC client) |",
    );
    expect(table[2]).toBe(
      "| produce-6-partitions-1kib: records_per_s (1/s) | 40 | 20 | – | 30 | 35 |",
    );
    expect(table[3]).toBe(
      "| txn-6-partitions commit-every-100ms: overhead_pct (%) | – | – | 5 | – | – |",
    );
  });

  it("takes the median of a figure measured in several rounds", () => {
    const table = peerTable([line({ value: 10 }), line({ value: 30 }), line({ value: 11 })]);
    expect(table.split("\n")[2]).toBe("| produce-6-partitions-1kib: records_per_s (1/s) | 11 |");
  });
});

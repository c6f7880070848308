// The failover bench's rejoin condition, on hand-made /metrics samples.
import { describe, expect, it } from "vitest";
import { notRejoined, type NodeSamples } from "./_rejoin.js";
import { parseMetrics } from "./_storage-probes.js";

function node(nodeId: number, text: string): NodeSamples {
  return { nodeId, samples: parseMetrics(text) };
}

const healthy = [
  node(
    0,
    'tern_raft_leader{group="t/0"} 1\ntern_raft_commit_index{group="t/0"} 7\ntern_raft_applied_index{group="t/0"} 7\n',
  ),
  node(
    1,
    'tern_raft_leader{group="t/0"} 1\ntern_raft_commit_index{group="t/0"} 7\ntern_raft_applied_index{group="t/0"} 7\ntern_raft_follower_lag_entries{peer="0"} 0\n',
  ),
];

describe("notRejoined", () => {
  it("accepts a replica that follows the common leader and has applied the highest commit", () => {
    expect(notRejoined(0, healthy)).toBeUndefined();
  });

  it("waits while a replica knows no leader or replicas disagree", () => {
    expect(notRejoined(0, [node(0, 'tern_raft_leader{group="t/0"} -1\n'), healthy[1]!])).toMatch(
      /knows no leader/,
    );
    expect(
      notRejoined(0, [
        node(0, 'tern_raft_leader{group="t/0"} 0\ntern_raft_applied_index{group="t/0"} 7\n'),
        healthy[1]!,
      ]),
    ).toMatch(/different leaders/);
  });

  it("waits while the rejoining replica is behind or a leader sees it lagging", () => {
    expect(
      notRejoined(0, [
        node(0, 'tern_raft_leader{group="t/0"} 1\ntern_raft_applied_index{group="t/0"} 5\n'),
        healthy[1]!,
      ]),
    ).toMatch(/applied t\/0 to 5 of 7/);
    const lagging = node(
      1,
      'tern_raft_leader{group="t/0"} 1\ntern_raft_commit_index{group="t/0"} 7\ntern_raft_follower_lag_entries{peer="0"} 3\n',
    );
    expect(notRejoined(0, [healthy[0]!, lagging])).toMatch(/lags 3 entries/);
    expect(notRejoined(0, [node(0, ""), healthy[1]!])).toMatch(/no group open/);
  });
});

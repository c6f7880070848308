// The per-group position gauges: read from the open groups at scrape time, gone once the host
// unregisters (what `npm run bench -- storage` polls to time a follower's catch-up).
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { registerGroupPositions, type GroupPositionSource } from "./metrics.js";

function group(groupId: string, commit: number, applied: number): GroupPositionSource {
  return { groupId, node: { basicStatus: () => ({ commit, applied, term: 3, leader: 2 }) } };
}

describe("registerGroupPositions", () => {
  it("reports each open group's commit and applied index when scraped", async () => {
    const register = new Registry();
    const groups = [group("t/0", 10, 9)];
    registerGroupPositions(() => groups, register);
    groups.push(group("t/1", 5, 5));
    const text = await register.metrics();
    expect(text).toContain('tern_raft_commit_index{group="t/0"} 10');
    expect(text).toContain('tern_raft_applied_index{group="t/0"} 9');
    expect(text).toContain('tern_raft_commit_index{group="t/1"} 5');
    expect(text).toContain('tern_raft_term{group="t/0"} 3');
    expect(text).toContain('tern_raft_leader{group="t/0"} 2');
  });

  it("sums the groups of every host in the registry and drops an unregistered host", async () => {
    const register = new Registry();
    const stopA = registerGroupPositions(() => [group("a/0", 1, 1)], register);
    registerGroupPositions(() => [group("b/0", 2, 2)], register);
    expect(await register.metrics()).toContain('tern_raft_applied_index{group="a/0"} 1');
    stopA();
    const text = await register.metrics();
    expect(text).not.toContain('group="a/0"');
    expect(text).toContain('tern_raft_applied_index{group="b/0"} 2');
  });
});

// Majority arithmetic over the voter set: the commit index a quorum has reached and the outcome
// of an election. Voter sets are small (3 or 5), so sorting a copy is cheap.
import type { NodeId } from "./types.js";

export type VoteResult = "won" | "lost" | "pending";

export function quorumSize(voterCount: number): number {
  return Math.floor(voterCount / 2) + 1;
}

/** The largest index that a majority of voters has matched. */
export function committedIndex(voters: readonly NodeId[], matchOf: (id: NodeId) => number): number {
  if (voters.length === 0) return Number.MAX_SAFE_INTEGER;
  const matches = voters.map(matchOf).sort((a, b) => b - a);
  return matches[quorumSize(voters.length) - 1]!;
}

export function voteResult(voters: readonly NodeId[], votes: ReadonlyMap<NodeId, boolean>): VoteResult {
  const q = quorumSize(voters.length);
  let granted = 0;
  let rejected = 0;
  for (const id of voters) {
    const v = votes.get(id);
    if (v === true) granted++;
    else if (v === false) rejected++;
  }
  if (granted >= q) return "won";
  if (rejected >= q) return "lost";
  return "pending";
}

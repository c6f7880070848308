// Majority arithmetic over the voter set: the commit index a quorum has reached and the outcome
// of an election. Voter sets are small (3 or 5), so sorting a copy is cheap.
import type { NodeId } from "./types.js";

export type VoteResult = "won" | "lost" | "pending";

export function quorumSize(voterCount: number): number {
  return Math.floor(voterCount / 2) + 1;
}

const scratch: number[] = [];

/** The largest index that a majority of voters has matched (hot path: no allocation). */
export function committedIndex(voters: readonly NodeId[], matchOf: (id: NodeId) => number): number {
  const n = voters.length;
  if (n === 0) return Number.MAX_SAFE_INTEGER;
  // Insertion sort, descending: voter sets are tiny.
  for (let i = 0; i < n; i++) {
    const v = matchOf(voters[i]!);
    let j = i;
    while (j > 0 && scratch[j - 1]! < v) {
      scratch[j] = scratch[j - 1]!;
      j--;
    }
    scratch[j] = v;
  }
  return scratch[quorumSize(n) - 1]!;
}

export function voteResult(
  voters: readonly NodeId[],
  votes: ReadonlyMap<NodeId, boolean>,
): VoteResult {
  const q = quorumSize(voters.length);
  let granted = 0;
  let rejected = 0;
  for (const id of voters) {
    const v = votes.get(id);
    if (v === true) granted++;
    else if (v === false) rejected++;
  }
  if (granted >= q) return "won";
  // Lost as soon as the votes still outstanding cannot make a quorum (etcd's VoteLost). Waiting
  // for a quorum of rejections kept a candidate of an even-sized group (2 of 4, 1 of 2 rejected)
  // a candidate until its election timeout.
  if (voters.length - rejected < q) return "lost";
  return "pending";
}

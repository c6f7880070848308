// The membership after one single-server conf change: the rule the core applies when a change
// commits, exported so that a state machine keeping its own log (a partition's segments) can
// record the membership at any index without asking the core.
import type { ConfChange, ConfState } from "./types.js";
import { ConfChangeType } from "./types.js";

export function nextConfState(conf: ConfState, cc: ConfChange): ConfState {
  const voters = conf.voters.filter((v) => v !== cc.nodeId);
  const learners = conf.learners.filter((v) => v !== cc.nodeId);
  if (cc.type === ConfChangeType.AddVoter) voters.push(cc.nodeId);
  else if (cc.type === ConfChangeType.AddLearner) learners.push(cc.nodeId);
  voters.sort((a, b) => a - b);
  learners.sort((a, b) => a - b);
  return { voters, learners, outgoingVoters: [] };
}

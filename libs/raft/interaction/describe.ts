// Text forms of the core's Messages, Entries, Readies and progress for the interaction
// scenarios. They follow etcd-raft's Describe* output (message type names, `Log:term/index`,
// `Rejected (Hint: n)`, `Lead:0` for no leader) so a scenario's expectations can be compared
// line by line with etcd-raft's testdata; tern-only fields get their own suffixes.
import { decodeConfChange } from "../codec.js";
import {
  ConfChangeType,
  EntryType,
  MessageType,
  NONE,
  type ConfChange,
  type ConfState,
  type Entry,
  type HardState,
  type Message,
  type NodeId,
  type PeerProgress,
  type Ready,
  type Snapshot,
  type SoftState,
} from "../types.js";

const MESSAGE_NAMES: Record<MessageType, string> = {
  [MessageType.Vote]: "MsgVote",
  [MessageType.VoteResponse]: "MsgVoteResp",
  [MessageType.PreVote]: "MsgPreVote",
  [MessageType.PreVoteResponse]: "MsgPreVoteResp",
  [MessageType.Append]: "MsgApp",
  [MessageType.AppendResponse]: "MsgAppResp",
  [MessageType.Heartbeat]: "MsgHeartbeat",
  [MessageType.HeartbeatResponse]: "MsgHeartbeatResp",
  [MessageType.Snapshot]: "MsgSnap",
  [MessageType.TimeoutNow]: "MsgTimeoutNow",
  [MessageType.ReadIndex]: "MsgReadIndex",
  [MessageType.ReadIndexResponse]: "MsgReadIndexResp",
  [MessageType.TransferLeader]: "MsgTransferLeader",
};

export function messageTypeName(t: MessageType): string {
  return MESSAGE_NAMES[t];
}

export function messageTypeByName(name: string): MessageType | undefined {
  for (const [k, v] of Object.entries(MESSAGE_NAMES))
    if (v === name) return Number(k) as MessageType;
  return undefined;
}

/** etcd prints 0 for "none"; tern's NONE is -1 and its scenario ids start at 1. */
export function id(n: NodeId): string {
  return n === NONE ? "0" : String(n);
}

const ROLE_NAMES = {
  follower: "StateFollower",
  "pre-candidate": "StatePreCandidate",
  candidate: "StateCandidate",
  leader: "StateLeader",
} as const;

export function roleName(role: keyof typeof ROLE_NAMES): string {
  return ROLE_NAMES[role];
}

export function describeConfChange(cc: ConfChange): string {
  const prefix =
    cc.type === ConfChangeType.AddVoter ? "v" : cc.type === ConfChangeType.AddLearner ? "l" : "r";
  return `${prefix}${cc.nodeId}`;
}

export function describeEntry(e: Entry): string {
  if (e.type === EntryType.ConfChange) {
    const cc = e.data.byteLength > 0 ? ` ${describeConfChange(decodeConfChange(e.data))}` : "";
    return `${e.term}/${e.index} EntryConfChange${cc}`;
  }
  return `${e.term}/${e.index} EntryNormal ${JSON.stringify(new TextDecoder().decode(e.data))}`;
}

export function describeEntries(entries: readonly Entry[]): string {
  return entries.map((e) => describeEntry(e) + "\n").join("");
}

export function describeHardState(hs: HardState): string {
  return `Term:${hs.term}${hs.vote !== NONE ? ` Vote:${hs.vote}` : ""} Commit:${hs.commit}`;
}

export function describeSoftState(ss: SoftState): string {
  return `Lead:${id(ss.leader)} State:${roleName(ss.role)}`;
}

export function describeConfState(cs: ConfState): string {
  return `Voters:[${cs.voters.join(" ")}] Learners:[${cs.learners.join(" ")}]`;
}

export function describeSnapshot(s: Snapshot): string {
  return `Index:${s.metadata.index} Term:${s.metadata.term} ConfState:${describeConfState(s.metadata.confState)}`;
}

export function describeMessage(m: Message): string {
  let s = `${id(m.from)}->${id(m.to)} ${messageTypeName(m.type)} Term:${m.term} Log:${m.logTerm}/${m.index}`;
  if (m.reject) s += ` Rejected (Hint: ${m.rejectHint})`;
  if (m.commit !== 0) s += ` Commit:${m.commit}`;
  if (m.entries.length === 1) s += ` Entries:[${describeEntry(m.entries[0]!)}]`;
  else if (m.entries.length > 1)
    s += ` Entries:[${m.entries.map((e) => `\n  ${describeEntry(e)}`).join("")}\n]`;
  if (m.context !== undefined && m.context.byteLength > 0)
    s += ` Context:${JSON.stringify(new TextDecoder().decode(m.context))}`;
  if (m.quiesce) s += " Quiesce";
  if (m.snapshot !== undefined) s += `\n  Snapshot: ${describeSnapshot(m.snapshot)}`;
  return s;
}

export function describeReady(rd: Ready): string {
  let b = "";
  if (rd.softState) b += describeSoftState(rd.softState) + "\n";
  if (rd.hardState) b += `HardState ${describeHardState(rd.hardState)}\n`;
  if (rd.confState) b += `ConfState ${describeConfState(rd.confState)}\n`;
  if (rd.readStates.length > 0) {
    b += `ReadStates ${rd.readStates.map((r) => `{${r.index} ${JSON.stringify(new TextDecoder().decode(r.context))}}`).join(" ")}\n`;
  }
  if (rd.entries.length > 0) b += "Entries:\n" + describeEntries(rd.entries);
  if (rd.snapshot) b += `Snapshot ${describeSnapshot(rd.snapshot)}\n`;
  if (rd.committedEntries.length > 0)
    b += "CommittedEntries:\n" + describeEntries(rd.committedEntries);
  if (rd.messages.length > 0)
    b += "Messages:\n" + rd.messages.map((m) => describeMessage(m) + "\n").join("");
  return b === "" ? "<empty Ready>\n" : `Ready MustSync=${rd.mustSync}:\n${b}`;
}

export function describeProgress(peer: NodeId, pr: PeerProgress): string {
  const state =
    pr.state === "probe"
      ? "StateProbe"
      : pr.state === "replicate"
        ? "StateReplicate"
        : "StateSnapshot";
  return `${peer}: ${state} match=${pr.match} next=${pr.next}${pr.isLearner ? " learner" : ""}${pr.recentActive ? "" : " inactive"}`;
}

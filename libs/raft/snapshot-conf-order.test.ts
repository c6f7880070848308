// A snapshot restored while a Ready is still outstanding: the Ready's committed conf changes are
// older than the snapshot's membership, which already reflects them and everything after. When
// the host finishes that Ready, advance() must not apply them on top (simulator seed 340896,
// 3 nodes, 5,000 steps: node 3 applied "AddLearner 3" (index 1092) after restoring a snapshot
// at 1111 that held it as a voter again, believed itself a learner for ever and never
// campaigned; the only node that did campaign had a log too short to win).
import { describe, expect, it } from "vitest";
import { SeededRandom } from "../common/prng.js";
import { encodeConfChange } from "./codec.js";
import { MemoryStorage } from "./memory-storage.js";
import { RawNode } from "./raw-node.js";
import { TEST_CONFIG } from "./testing/test-cluster.js";
import {
  ConfChangeType,
  EntryType,
  MessageType,
  type Entry,
  type Message,
  type Ready,
} from "./types.js";

const EMPTY = new Uint8Array(0);
const LEADER = 1;
const TERM = 1;
/** Index of the leader's snapshot, after the AddLearner(3) at 2 and an AddVoter(3) at 5. */
const SNAPSHOT_INDEX = 10;

function message(fields: Partial<Message> & Pick<Message, "type">): Message {
  return {
    from: LEADER,
    to: 3,
    term: TERM,
    logTerm: 0,
    index: 0,
    entries: [],
    commit: 0,
    reject: false,
    rejectHint: 0,
    ...fields,
  };
}

function persist(storage: MemoryStorage, rd: Ready): void {
  if (rd.snapshot) storage.applySnapshot(rd.snapshot);
  storage.append(rd.entries);
  if (rd.hardState) storage.setHardState(rd.hardState);
  if (rd.confState) storage.setConfState(rd.confState);
}

describe("a snapshot restored while a Ready is outstanding", () => {
  it("keeps the snapshot's membership: the Ready's older conf changes are not applied on top", () => {
    const storage = new MemoryStorage({ voters: [1, 2, 3] });
    const node = new RawNode({ ...TEST_CONFIG, id: 3 }, storage, new SeededRandom(7));
    const demote: Entry = {
      term: TERM,
      index: 2,
      type: EntryType.ConfChange,
      data: encodeConfChange({ type: ConfChangeType.AddLearner, nodeId: 3 }),
    };
    const entries: Entry[] = [
      { term: TERM, index: 1, type: EntryType.Normal, data: EMPTY },
      demote,
    ];
    node.step(message({ type: MessageType.Append, index: 0, logTerm: 0, entries }));
    let rd = node.ready();
    persist(storage, rd);
    node.advance();
    node.step(message({ type: MessageType.Heartbeat, commit: 2 }));
    // The host takes the Ready that applies the demotion, and is slow to finish it...
    rd = node.ready();
    expect(rd.committedEntries.map((e) => e.index)).toEqual([1, 2]);
    // ...while the leader's snapshot arrives: by index 10 node 3 is a voter again.
    const snapshot = {
      metadata: {
        index: SNAPSHOT_INDEX,
        term: TERM,
        confState: { voters: [1, 2, 3], learners: [], outgoingVoters: [] },
      },
      data: EMPTY,
    };
    expect(node.hasPendingSnapshot()).toBe(false);
    node.step(message({ type: MessageType.Snapshot, snapshot }));
    // Until the snapshot is handed over and accepted, the host must not snapshot on its own:
    // the core's membership is already the snapshot's.
    expect(node.hasPendingSnapshot()).toBe(true);
    persist(storage, rd);
    node.advance();
    rd = node.ready();
    expect(rd.snapshot?.metadata.index).toBe(SNAPSHOT_INDEX);
    expect(node.hasPendingSnapshot()).toBe(true);
    persist(storage, rd);
    node.advance();
    expect(node.hasPendingSnapshot()).toBe(false);
    expect(node.confState()).toEqual({ voters: [1, 2, 3], learners: [], outgoingVoters: [] });
    // And it behaves as a voter: with no leader heard from, it campaigns.
    const sent: Message[] = [];
    for (let t = 0; t < 3 * TEST_CONFIG.electionTick; t++) {
      node.tick();
      if (!node.hasReady()) continue;
      rd = node.ready();
      persist(storage, rd);
      sent.push(...rd.messages);
      node.advance();
    }
    expect(sent.some((m) => m.type === MessageType.PreVote)).toBe(true);
  });
});

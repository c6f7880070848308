// The Raft state machine (etcd-raft design): roles, elections with pre-vote and check-quorum,
// replication with flow control, snapshots, leadership transfer, single-server membership
// changes and read-index. Pure and synchronous: output accumulates in `msgs` and `readStates`
// and leaves through RawNode's Ready.
import { assert } from "../common/assert.js";
import type { Random } from "../common/prng.js";
import { decodeConfChange, encodeConfChange } from "./codec.js";
import { nextConfState } from "./conf-state.js";
import { Progress } from "./progress.js";
import { committedIndex, voteResult } from "./quorum.js";
import { RaftLog, TERM_UNKNOWN } from "./raft-log.js";
import { READ_INDEX_CONTEXT_BYTES_MAX, ReadOnly } from "./read-only.js";
import {
  LogUnavailableError,
  EntryType,
  MessageType,
  NONE,
  ProposalDroppedError,
  entrySizeBytes,
  type ConfChange,
  type ConfState,
  type Entry,
  type Message,
  type NodeId,
  type RaftConfig,
  type RaftRole,
  type RaftStorage,
  type ReadState,
} from "./types.js";

const EMPTY = new Uint8Array(0);
/** Context of a Vote sent after TimeoutNow: voters must not ignore it because of their lease. */
export const CAMPAIGN_TRANSFER_CONTEXT = new Uint8Array([0x54, 0x52]);
/** Read-index requests waiting for the new leader's first commit; beyond, they are dropped. */
const PENDING_READ_INDEX_MAX = 4096;
/** Bytes scanned when looking for unapplied conf changes before campaigning. */
const CONF_SCAN_BYTES_MAX = 1 << 20;

type CampaignType = "pre-election" | "election" | "transfer";

type MutableMessage = { -readonly [K in keyof Message]: Message[K] };

export class Raft {
  readonly id: NodeId;
  term = 0;
  vote: NodeId = NONE;
  lead: NodeId = NONE;
  role: RaftRole = "follower";
  readonly log: RaftLog;
  readonly prs = new Map<NodeId, Progress>();
  voters: NodeId[] = [];
  learners: NodeId[] = [];
  msgs: Message[] = [];
  readStates: ReadState[] = [];
  leadTransferee: NodeId = NONE;
  /** Set when membership changed; RawNode reports the new ConfState in the next Ready. */
  confStateChanged = false;

  private readonly votes = new Map<NodeId, boolean>();
  private electionElapsed = 0;
  private heartbeatElapsed = 0;
  private randomizedElectionTimeout = 0;
  /**
   * Follower: election timeout (in electionElapsed ticks) after reportNodeLost(leader), used
   * instead of randomizedElectionTimeout; Infinity when no loss is pending. Cleared whenever the
   * leader (or a candidate we vote for) is heard, so a spurious signal does not linger.
   */
  private hastenedElectionTimeout = Infinity;
  /**
   * (Pre-)candidate: voters whose vote request the host reported lost (reportUnreachable)
   * before they answered; asked again at the next slot tick (resendLostVoteRequests).
   */
  private readonly voteRequestsLost = new Set<NodeId>();
  /**
   * The campaign campaignSoon asked for (pending or under way, within its first election
   * timeout): its requests go again to every voter that has not answered, each slot, since a
   * replica that has not opened the new group yet drops them without a word.
   */
  private firstCampaign = false;
  /** (Pre-)candidate: the campaign under way is a transfer (its requests carry the transfer context). */
  private campaignTransfer = false;
  private pendingConfIndex = 0;
  /**
   * Log index the membership reflects: a restored snapshot's, or the last conf change applied
   * (0 at start: entries replayed after a restart are applied again, which is idempotent).
   */
  private confIndex = 0;
  private uncommittedSize = 0;
  private readonly readOnly = new ReadOnly();
  private pendingReadIndex: { from: NodeId; context: Uint8Array }[] = [];
  /** Entries were proposed and not yet offered to followers (see flushProposals). */
  proposalsUnsent = false;
  /** Quiesced: the clock is stopped (no heartbeats, no election timeout) until woken. */
  quiesced = false;

  constructor(
    private readonly config: RaftConfig,
    storage: RaftStorage,
    private readonly random: Random,
  ) {
    this.id = config.id;
    const { hardState, confState } = storage.initialState();
    this.log = new RaftLog(storage, hardState.commit, config.applied);
    this.setConf(confState);
    this.becomeFollower(hardState.term, NONE);
    this.vote = hardState.vote;
  }

  // ---------------------------------------------------------------- membership

  confState(): ConfState {
    return { voters: this.voters.slice(), learners: this.learners.slice(), outgoingVoters: [] };
  }

  private setConf(cs: ConfState): void {
    assert(
      cs.outgoingVoters.length === 0,
      "joint configurations are not supported (single-server changes only)",
    );
    this.voters = [...cs.voters];
    this.learners = [...cs.learners];
    for (const id of [...this.prs.keys()]) {
      if (!this.voters.includes(id) && !this.learners.includes(id)) this.prs.delete(id);
    }
    const next = this.log.lastIndex() + 1;
    for (const id of [...this.voters, ...this.learners]) {
      const pr = this.prs.get(id);
      if (pr) pr.isLearner = this.learners.includes(id);
      else {
        const fresh = new Progress(
          next,
          this.config.maxInflightMsgs,
          this.learners.includes(id),
          this.config.maxInflightBytes ?? 0,
        );
        if (id === this.id) fresh.match = next - 1;
        this.prs.set(id, fresh);
      }
    }
  }

  promotable(): boolean {
    return this.voters.includes(this.id) && this.log.pendingSnapshot() === undefined;
  }

  /** Applies a committed conf change (called by RawNode.advance after the host applied it). */
  applyConfChange(cc: ConfChange): void {
    this.setConf(
      nextConfState({ voters: this.voters, learners: this.learners, outgoingVoters: [] }, cc),
    );
    this.confStateChanged = true;
    if (this.role !== "leader") return;
    if (!this.voters.includes(this.id)) {
      // A removed (or demoted) leader steps down; the others elect a new one.
      this.becomeFollower(this.term, NONE);
      return;
    }
    if (this.leadTransferee !== NONE && !this.voters.includes(this.leadTransferee))
      this.abortLeaderTransfer();
    if (this.maybeCommit()) this.bcastAppend();
    else for (const id of this.prs.keys()) if (id !== this.id) this.maybeSendAppend(id, false);
  }

  /** Applies a snapshot's membership (follower restore). */
  private restoreConf(cs: ConfState, index: number): void {
    this.prs.clear();
    this.setConf(cs);
    this.confIndex = index;
    this.confStateChanged = true;
  }

  // ---------------------------------------------------------------- roles

  private reset(term: number): void {
    if (this.term !== term) {
      this.term = term;
      this.vote = NONE;
    }
    this.lead = NONE;
    this.quiesced = false;
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    this.randomizedElectionTimeout =
      this.config.electionTick + this.random.int(0, this.config.electionTick);
    this.hastenedElectionTimeout = Infinity;
    this.voteRequestsLost.clear();
    this.firstCampaign = false;
    this.abortLeaderTransfer();
    this.votes.clear();
    const last = this.log.lastIndex();
    for (const [id, pr] of this.prs) {
      const fresh = new Progress(
        last + 1,
        this.config.maxInflightMsgs,
        pr.isLearner,
        this.config.maxInflightBytes ?? 0,
      );
      if (id === this.id) {
        // A leader counts its own copy only once it is durable (persistedTo), never earlier.
        fresh.match = this.log.durableIndex();
        fresh.recentActive = true;
      }
      this.prs.set(id, fresh);
    }
    this.pendingConfIndex = 0;
    this.uncommittedSize = 0;
    this.readOnly.reset();
    this.pendingReadIndex = [];
  }

  becomeFollower(term: number, lead: NodeId): void {
    this.reset(term);
    this.lead = lead;
    this.role = "follower";
  }

  private becomePreCandidate(): void {
    assert(this.role !== "leader", "leader cannot become pre-candidate");
    this.votes.clear();
    this.voteRequestsLost.clear();
    this.lead = NONE;
    this.role = "pre-candidate";
  }

  private becomeCandidate(): void {
    assert(this.role !== "leader", "leader cannot become candidate");
    this.reset(this.term + 1);
    this.vote = this.id;
    this.role = "candidate";
  }

  private becomeLeader(): void {
    assert(this.role === "candidate", "only a candidate becomes leader");
    this.reset(this.term);
    this.lead = this.id;
    this.role = "leader";
    this.prs.get(this.id)?.becomeReplicate();
    // Conservatively forbid conf changes until everything in the log is applied.
    this.pendingConfIndex = this.log.lastIndex();
    // The no-op lets the leader commit (and so learn the commit index) in its own term.
    this.appendEntries([{ term: 0, index: 0, type: EntryType.Normal, data: EMPTY }]);
  }

  // ---------------------------------------------------------------- ticks

  tick(): void {
    if (this.quiesced) return;
    if (this.role === "leader") this.tickHeartbeat();
    else this.tickElection();
  }

  private tickElection(): void {
    this.electionElapsed++;
    // A leader heard, or our vote given to another: the first campaign is off.
    if (this.lead !== NONE || (this.vote !== NONE && this.vote !== this.id))
      this.firstCampaign = false;
    // A pending hastened timeout replaces the randomized one (rather than the earlier of the
    // two): the survivors' rank slots then decide who campaigns first, not a random timer.
    const timeout =
      this.hastenedElectionTimeout !== Infinity
        ? this.hastenedElectionTimeout
        : this.randomizedElectionTimeout;
    if (this.promotable() && this.electionElapsed >= timeout) {
      // A first campaign that timed out is an ordinary one from now on.
      if (this.role !== "follower") this.firstCampaign = false;
      this.electionElapsed = 0;
      this.hastenedElectionTimeout = Infinity;
      this.hup(this.config.preVote ? "pre-election" : "election");
      return;
    }
    // Resends, (pre-)candidates only: a follower has none (reset clears them).
    if (this.role === "follower" || this.electionElapsed % this.slotTicks() !== 0) return;
    // Resends of a first campaign stop at an election timeout, before any other replica of the
    // new group can have campaigned (their randomized timeouts are longer): no split vote.
    if (this.firstCampaign && this.electionElapsed < this.config.electionTick)
      for (const id of this.voters) if (id !== this.id) this.voteRequestsLost.add(id);
    if (this.voteRequestsLost.size > 0) this.resendLostVoteRequests();
  }

  /** A rank slot of reportNodeLost; also the pace of vote request resends. */
  private slotTicks(): number {
    return Math.max(1, Math.floor(this.config.electionTick / 8));
  }

  /**
   * (Pre-)candidate: asks again the voters whose request the host reported lost (Raft retries
   * RequestVote). A request lost on a connection that broke, or queued for a peer restarted
   * just before, otherwise costs a whole randomized election timeout: a crash failover stalled
   * on one (raft-crash-failover.test.ts, back to back). Only lost requests are resent: a voter
   * that ignores one (its leader lease) is not asked again, since its answer once the lease
   * runs out could split a vote the survivors' rank slots keep apart. The same request again
   * changes nothing for a voter that already saw it: it grants the same candidate or refuses.
   */
  private resendLostVoteRequests(): void {
    const pre = this.role === "pre-candidate";
    for (const id of this.voteRequestsLost) if (!this.votes.has(id)) this.sendVoteRequest(id, pre);
    this.voteRequestsLost.clear();
  }

  private sendVoteRequest(to: NodeId, pre: boolean): void {
    const m: MutableMessage = this.message(pre ? MessageType.PreVote : MessageType.Vote, to, {
      term: pre ? this.term + 1 : this.term,
      index: this.log.lastIndex(),
      logTerm: this.log.lastTerm(),
    });
    if (this.campaignTransfer) m.context = CAMPAIGN_TRANSFER_CONTEXT;
    this.send(m);
  }

  private tickHeartbeat(): void {
    this.heartbeatElapsed++;
    this.electionElapsed++;
    if (this.electionElapsed >= this.config.electionTick) {
      this.electionElapsed = 0;
      if (this.config.checkQuorum && !this.quorumActive()) {
        this.becomeFollower(this.term, NONE);
        return;
      }
      // A transfer that did not finish within an election timeout is abandoned.
      if (this.leadTransferee !== NONE) this.abortLeaderTransfer();
    }
    if (this.heartbeatElapsed >= this.config.heartbeatTick) {
      // An idle group heartbeats at the slower idle interval (still several per election timeout).
      if (
        this.heartbeatElapsed < (this.config.idleHeartbeatTick ?? this.config.heartbeatTick) &&
        this.isIdle()
      )
        return;
      this.heartbeatElapsed = 0;
      if (this.config.quiesce && this.canQuiesce()) {
        this.quiesce();
        return;
      }
      this.bcastHeartbeat(this.readOnly.lastPendingContext());
    }
  }

  // ---------------------------------------------------------------- quiescence
  //
  // An idle group whose voters are all live stops ticking (CockroachDB-style): the leader sends
  // one quiesce heartbeat and stops heartbeating; followers stop their election clocks. Only
  // timing changes: nothing here touches terms, votes, logs or commit rules. A group wakes on
  // any message (step), a proposal, a read or a transfer, and on reportNodeDown (the host's
  // node-level liveness: a node silent for an election timeout, or restarted).

  /**
   * Leader: idle, everything committed is applied (a committed conf change may still remove or
   * demote us, after which we would send nothing), and every voter answered since the last
   * check-quorum round or wake-up.
   */
  private canQuiesce(): boolean {
    if (
      !this.isIdle() ||
      this.pendingReadIndex.length > 0 ||
      this.log.applied !== this.log.committed
    )
      return false;
    for (const id of this.voters)
      if (id !== this.id && !this.prs.get(id)?.recentActive) return false;
    return true;
  }

  private quiesce(): void {
    for (const [id, pr] of this.prs) {
      if (id === this.id) continue;
      const m = this.message(MessageType.Heartbeat, id, {
        commit: Math.min(pr.match, this.log.committed),
      });
      m.quiesce = true;
      this.send(m);
    }
    this.quiesced = true;
  }

  /** Restarts the clock. A leader heartbeats now and re-quiesces only after every voter answers again. */
  private wake(): void {
    if (!this.quiesced) return;
    this.quiesced = false;
    if (this.role !== "leader") return;
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    for (const [id, pr] of this.prs) if (id !== this.id) pr.recentActive = false;
    this.bcastHeartbeat(undefined);
  }

  /**
   * Node-level liveness from the host: `id` was silent for an election timeout (or restarted).
   * A quiesced follower of it wakes with its lease already expired, so it campaigns within an
   * election timeout as it would have without quiescence; a quiesced leader wakes so that
   * check-quorum runs again.
   */
  reportNodeDown(id: NodeId): void {
    if (!this.quiesced || id === this.id) return;
    if (this.role === "leader") {
      if (this.prs.has(id)) this.wake();
      return;
    }
    if (this.lead !== id) return;
    this.wake();
    this.electionElapsed = Math.max(this.electionElapsed, this.config.electionTick);
  }

  /**
   * Hard connection loss from the host: the transport's connections to `id` broke (a killed
   * process's sockets are reset at once). Only timing changes, so a spurious or late call is
   * safe. A follower of `id` drops its lease now (so it grants pre-votes to the other
   * survivors, which got the same signal over their own connections) and campaigns after a
   * short delay instead of a whole randomized election timeout: 1 tick plus a slot per rank
   * among the surviving voters (rotated by term so leadership spreads) plus a random tick
   * early in the slot, so two survivors do not campaign in the same instant and split the vote.
   * A live leader still wins: the other followers' leases reject the pre-vote, and its next
   * heartbeat (or its answer to the pre-vote that woke it) clears the hastened timeout.
   */
  reportNodeLost(id: NodeId): void {
    if (id === this.id) return;
    if (this.quiesced) this.reportNodeDown(id);
    if (this.role !== "follower" || this.lead !== id || !this.promotable()) return;
    const survivors = this.voters.filter((v) => v !== id).sort((a, b) => a - b);
    const rank = (survivors.indexOf(this.id) + this.term) % survivors.length;
    const slot = this.slotTicks();
    this.electionElapsed = Math.max(this.electionElapsed, this.config.electionTick);
    // The jitter leaves the last ticks of each slot empty: the survivors' tick clocks can be a
    // tick apart (separate processes), and adjacent slots would then fire together, both
    // pre-candidates grant each other, and the real vote splits (node-lost.test.ts).
    const delay = 1 + rank * slot + this.random.int(0, Math.max(1, slot - 1));
    // A second report (the other stream's) keeps the first deadline.
    if (this.hastenedElectionTimeout === Infinity)
      this.hastenedElectionTimeout = this.electionElapsed + delay;
  }

  /**
   * A group just created, this replica its preferred leader (the host decides: the first of the
   * initial voters): campaign after `ticks` instead of the randomized 1-2 election timeouts, as
   * Kafka makes a new partition's first replica its leader at once. The other replicas keep
   * their randomized timeouts, so nobody competes with it; if its votes are lost it campaigns
   * again at its normal timeout. Cleared, like reportNodeLost's, once a leader is heard.
   */
  campaignSoon(ticks: number): void {
    if (this.role !== "follower" || this.lead !== NONE || !this.promotable()) return;
    this.firstCampaign = true;
    this.hastenedElectionTimeout = Math.min(
      this.hastenedElectionTimeout,
      this.electionElapsed + Math.max(1, ticks),
    );
  }

  /** Follower: the leader's quiesce heartbeat was handled; stop the clock if we are caught up. */
  private maybeQuiesceFollower(m: Message): boolean {
    if (
      !m.quiesce ||
      this.role !== "follower" ||
      this.lead !== m.from ||
      this.log.committed !== m.commit
    )
      return false;
    this.quiesced = true;
    this.electionElapsed = 0;
    return true;
  }

  /** Leader: every follower holds the whole log, all of it is committed, nothing is pending. */
  private isIdle(): boolean {
    const last = this.log.lastIndex();
    if (
      this.log.committed !== last ||
      this.leadTransferee !== NONE ||
      this.readOnly.lastPendingContext() !== undefined
    )
      return false;
    for (const pr of this.prs.values()) if (pr.match !== last) return false;
    return true;
  }

  /** Check-quorum: did a majority of voters talk to us during the last election timeout? */
  private quorumActive(): boolean {
    let active = 0;
    for (const id of this.voters) {
      const pr = this.prs.get(id);
      if (id === this.id || pr?.recentActive) active++;
    }
    for (const [id, pr] of this.prs) if (id !== this.id) pr.recentActive = false;
    return active >= Math.floor(this.voters.length / 2) + 1;
  }

  // ---------------------------------------------------------------- elections

  hup(type: CampaignType): void {
    this.wake();
    if (this.role === "leader") return;
    if (!this.promotable() || this.hasUnappliedConfChanges()) return;
    this.campaign(type);
  }

  private hasUnappliedConfChanges(): boolean {
    let lo = this.log.applied + 1;
    const hi = this.log.committed + 1;
    if (lo < this.log.firstIndex()) return false;
    for (let pages = 0; lo < hi && pages < 1024; pages++) {
      const page = this.log.slice(lo, hi, CONF_SCAN_BYTES_MAX);
      for (const e of page) if (e.type === EntryType.ConfChange) return true;
      lo = page[page.length - 1]!.index + 1;
    }
    return false;
  }

  private campaign(type: CampaignType): void {
    const pre = type === "pre-election";
    const first = this.firstCampaign;
    if (pre) this.becomePreCandidate();
    else this.becomeCandidate();
    this.firstCampaign = first; // from its pre-vote to its vote
    this.votes.set(this.id, true);
    if (voteResult(this.voters, this.votes) === "won") {
      if (pre) this.campaign("election");
      else this.becomeLeader();
      return;
    }
    this.campaignTransfer = type === "transfer";
    for (const id of this.voters) if (id !== this.id) this.sendVoteRequest(id, pre);
  }

  private message(
    type: MessageType,
    to: NodeId,
    fields: Partial<MutableMessage> = {},
  ): MutableMessage {
    return {
      type,
      from: this.id,
      to,
      term: this.term,
      logTerm: 0,
      index: 0,
      entries: [],
      commit: 0,
      reject: false,
      rejectHint: 0,
      ...fields,
    };
  }

  private send(m: Message): void {
    assert(m.to !== this.id, "raft never sends to itself");
    this.msgs.push(m);
  }

  // ---------------------------------------------------------------- step

  step(m: Message): void {
    this.wake();
    if (m.term === 0) {
      // Forwarded local requests (ReadIndex, TransferLeader) carry no term.
    } else if (m.term > this.term) {
      if (!this.stepHigherTerm(m)) return;
    } else if (m.term < this.term) {
      this.stepLowerTerm(m);
      return;
    }
    switch (m.type) {
      case MessageType.Vote:
      case MessageType.PreVote:
        this.handleVoteRequest(m);
        return;
      default:
        if (this.role === "leader") this.stepLeader(m);
        else if (this.role === "follower") this.stepFollower(m);
        else this.stepCandidate(m);
    }
  }

  /** Returns false when the message must be ignored. */
  private stepHigherTerm(m: Message): boolean {
    if (m.type === MessageType.Vote || m.type === MessageType.PreVote) {
      const force = m.context !== undefined && bytesEqual(m.context, CAMPAIGN_TRANSFER_CONTEXT);
      const inLease =
        this.config.checkQuorum &&
        this.lead !== NONE &&
        this.electionElapsed < this.config.electionTick;
      // Leader lease: while we hear from a live leader, a (pre-)candidate cannot disrupt us.
      if (!force && inLease) return false;
    }
    if (m.type === MessageType.PreVote) return true; // a pre-vote never changes our term
    if (m.type === MessageType.PreVoteResponse && !m.reject) return true; // the pre-candidate bumps the term itself
    const fromLeader =
      m.type === MessageType.Append ||
      m.type === MessageType.Heartbeat ||
      m.type === MessageType.Snapshot;
    this.becomeFollower(m.term, fromLeader ? m.from : NONE);
    return true;
  }

  private stepLowerTerm(m: Message): void {
    if (
      (this.config.checkQuorum || this.config.preVote) &&
      (m.type === MessageType.Heartbeat || m.type === MessageType.Append)
    ) {
      // A stale leader cut off from us: tell it our term so it steps down (it would otherwise
      // keep a lease that blocks pre-votes forever).
      this.send(this.message(MessageType.AppendResponse, m.from));
    } else if (m.type === MessageType.PreVote) {
      this.send(this.message(MessageType.PreVoteResponse, m.from, { reject: true }));
    } else if (m.type === MessageType.Vote) {
      // Tell a stale candidate our term (Raft §5.1). Without this, when the nodes with the
      // newest log have lower terms than nodes that cannot win (stale log, or removed in their
      // own view), no election ever succeeds (simulator seed 10096, 5 nodes, no pre-vote).
      this.send(this.message(MessageType.VoteResponse, m.from, { reject: true }));
    }
  }

  private handleVoteRequest(m: Message): void {
    const isPre = m.type === MessageType.PreVote;
    const canVote =
      this.vote === m.from ||
      (this.vote === NONE && this.lead === NONE) ||
      (isPre && m.term > this.term);
    const responseType = isPre ? MessageType.PreVoteResponse : MessageType.VoteResponse;
    if (canVote && this.log.isUpToDate(m.index, m.logTerm)) {
      this.send(this.message(responseType, m.from, { term: m.term }));
      if (!isPre) {
        this.electionElapsed = 0;
        this.hastenedElectionTimeout = Infinity;
        this.vote = m.from;
      }
    } else {
      this.send(this.message(responseType, m.from, { reject: true }));
    }
  }

  private stepFollower(m: Message): void {
    switch (m.type) {
      case MessageType.Append:
        this.electionElapsed = 0;
        this.hastenedElectionTimeout = Infinity;
        this.lead = m.from;
        this.handleAppend(m);
        return;
      case MessageType.Heartbeat:
        this.electionElapsed = 0;
        this.hastenedElectionTimeout = Infinity;
        this.lead = m.from;
        this.handleHeartbeat(m);
        return;
      case MessageType.Snapshot:
        this.electionElapsed = 0;
        this.hastenedElectionTimeout = Infinity;
        this.lead = m.from;
        this.handleSnapshot(m);
        return;
      case MessageType.TransferLeader:
      case MessageType.ReadIndex:
        if (this.lead === NONE) return;
        this.send({ ...m, to: this.lead, term: 0 });
        return;
      case MessageType.TimeoutNow:
        this.hup("transfer");
        return;
      case MessageType.ReadIndexResponse:
        if (m.context) this.readStates.push({ index: m.index, context: m.context });
        return;
      default:
        return;
    }
  }

  private stepCandidate(m: Message): void {
    const myResponse =
      this.role === "pre-candidate" ? MessageType.PreVoteResponse : MessageType.VoteResponse;
    switch (m.type) {
      case MessageType.Append:
        this.becomeFollower(m.term, m.from);
        this.handleAppend(m);
        return;
      case MessageType.Heartbeat:
        this.becomeFollower(m.term, m.from);
        this.handleHeartbeat(m);
        return;
      case MessageType.Snapshot:
        this.becomeFollower(m.term, m.from);
        this.handleSnapshot(m);
        return;
      case myResponse: {
        this.votes.set(m.from, !m.reject);
        const result = voteResult(this.voters, this.votes);
        if (result === "won") {
          if (this.role === "pre-candidate") this.campaign("election");
          else {
            this.becomeLeader();
            this.bcastAppend();
          }
        } else if (result === "lost") {
          this.becomeFollower(this.term, NONE);
        }
        return;
      }
      default:
        return; // TimeoutNow, ReadIndex, TransferLeader: no leader to serve them
    }
  }

  // ---------------------------------------------------------------- follower handlers

  private handleAppend(m: Message): void {
    if (m.index < this.log.committed) {
      this.send(this.message(MessageType.AppendResponse, m.from, { index: this.log.committed }));
      return;
    }
    const lastNew = this.log.maybeAppend(m.index, m.logTerm, m.commit, m.entries);
    if (lastNew >= 0) {
      this.send(this.message(MessageType.AppendResponse, m.from, { index: lastNew }));
      return;
    }
    const hint = this.log.findConflictByTerm(Math.min(m.index, this.log.lastIndex()), m.logTerm);
    this.send(
      this.message(MessageType.AppendResponse, m.from, {
        index: m.index,
        reject: true,
        rejectHint: hint.index,
        logTerm: hint.term,
      }),
    );
  }

  private handleHeartbeat(m: Message): void {
    this.log.commitTo(m.commit);
    // A follower that quiesces does not answer: the answer would only wake the leader.
    if (this.maybeQuiesceFollower(m)) return;
    const response = this.message(MessageType.HeartbeatResponse, m.from);
    if (m.context) response.context = m.context;
    this.send(response);
  }

  private handleSnapshot(m: Message): void {
    const snap = m.snapshot;
    if (snap === undefined) return;
    const { index, term } = snap.metadata;
    if (index <= this.log.committed) {
      this.send(this.message(MessageType.AppendResponse, m.from, { index: this.log.committed }));
      return;
    }
    if (this.log.matchTerm(index, term)) {
      // We already have the snapshot's last entry: fast-forward the commit instead.
      this.log.commitTo(index);
    } else {
      this.log.restore(snap);
      this.restoreConf(snap.metadata.confState, index);
    }
    // committed, not lastIndex: after a fast-forward our tail beyond the snapshot is unverified.
    this.send(this.message(MessageType.AppendResponse, m.from, { index: this.log.committed }));
  }

  // ---------------------------------------------------------------- leader

  private stepLeader(m: Message): void {
    switch (m.type) {
      case MessageType.ReadIndex:
        if (m.context) this.handleReadIndex(m.from, m.context);
        return;
      case MessageType.TransferLeader:
        this.handleTransfer(m.index);
        return;
      default:
        break;
    }
    const pr = this.prs.get(m.from);
    if (pr === undefined) return;
    switch (m.type) {
      case MessageType.AppendResponse:
        pr.recentActive = true;
        this.handleAppendResponse(m, pr);
        return;
      case MessageType.HeartbeatResponse:
        pr.recentActive = true;
        this.handleHeartbeatResponse(m, pr);
        return;
      default:
        return;
    }
  }

  private handleAppendResponse(m: Message, pr: Progress): void {
    if (m.reject) {
      // The follower's entry at rejectHint has term logTerm, and so has every earlier one at most
      // that term: skip all our entries of a newer term in one round trip (etcd's fast probing).
      // Backing off one index per rejection left a follower with a long divergent suffix behind
      // for longer than a leader tenure lasted (simulator seed 200369).
      const probe =
        m.logTerm > 0
          ? Math.min(m.rejectHint, this.log.findConflictByTerm(m.rejectHint, m.logTerm).index)
          : m.rejectHint;
      if (pr.maybeDecrTo(m.index, probe)) {
        if (pr.state === "replicate") pr.becomeProbe();
        this.maybeSendAppend(m.from, true);
      }
      return;
    }
    const wasPaused = pr.isPaused();
    // An acknowledgement at match still ends probing: a follower reported unreachable while caught
    // up is back in replicate after one round trip (etcd's heartbeat_resp_recovers_from_probing).
    if (!pr.maybeUpdate(m.index) && !(pr.state === "probe" && pr.match === m.index)) return;
    if (pr.state === "probe") pr.becomeReplicate();
    else if (pr.state === "snapshot" && pr.match + 1 >= this.log.firstIndex()) {
      pr.becomeProbe();
      pr.becomeReplicate();
    } else if (pr.state === "replicate") pr.inflights.freeLE(m.index);

    if (pr.match > this.log.committed && this.maybeCommit()) {
      this.releasePendingReadIndex();
      this.bcastAppend();
    } else if (wasPaused) {
      this.maybeSendAppend(m.from, true);
    }
    // Refill the pipeline; bounded by the inflight window.
    for (let i = 0; i <= this.config.maxInflightMsgs && this.maybeSendAppend(m.from, false); i++);
    if (m.from === this.leadTransferee && pr.match === this.log.lastIndex()) {
      this.send(this.message(MessageType.TimeoutNow, m.from));
    }
  }

  private handleHeartbeatResponse(m: Message, pr: Progress): void {
    pr.probeSent = false;
    if (pr.state === "replicate" && pr.inflights.full()) pr.inflights.freeFirstOne();
    // A probing follower is probed even when caught up: only an Append's answer ends probing.
    if (pr.match < this.log.lastIndex() || pr.state === "probe") this.maybeSendAppend(m.from, true);
    else if (m.from === this.leadTransferee)
      this.send(this.message(MessageType.TimeoutNow, m.from)); // the first may be lost
    if (m.context === undefined) return;
    const req = this.readOnly.recvAck(m.from, m.context);
    if (req === undefined) return;
    req.acks.add(this.id);
    if (voteResult(this.voters, new Map([...req.acks].map((id) => [id, true]))) !== "won") return;
    for (const done of this.readOnly.advance(m.context))
      this.answerReadIndex(done.from, done.index, done.context);
  }

  private readonly matchOf = (id: NodeId): number => this.prs.get(id)?.match ?? 0;

  private maybeCommit(): boolean {
    const index = committedIndex(this.voters, this.matchOf);
    return this.log.maybeCommit(index, this.term);
  }

  bcastAppend(): void {
    for (const id of this.prs.keys()) if (id !== this.id) this.maybeSendAppend(id, true);
  }

  private bcastHeartbeat(context: Uint8Array | undefined): void {
    for (const [id, pr] of this.prs) {
      if (id === this.id) continue;
      const m = this.message(MessageType.Heartbeat, id, {
        commit: Math.min(pr.match, this.log.committed),
      });
      if (context) m.context = context;
      this.send(m);
    }
  }

  /** Leader: an append skipped because storage was reading is sent now (to every peer behind). */
  retryAppends(): void {
    if (this.role !== "leader") return;
    for (const [id, pr] of this.prs)
      if (id !== this.id && pr.match < this.log.lastIndex()) this.maybeSendAppend(id, false);
  }

  /** Sends one Append (or a Snapshot) to `to` if its progress allows; true when sent. */
  private maybeSendAppend(to: NodeId, sendIfEmpty: boolean): boolean {
    const pr = this.prs.get(to);
    if (pr === undefined || pr.isPaused()) return false;
    const prevIndex = pr.next - 1;
    const prevTerm = this.log.term(prevIndex);
    if (prevTerm === TERM_UNKNOWN || pr.next < this.log.firstIndex())
      return this.sendSnapshot(to, pr);
    const last = this.log.lastIndex();
    let entries: Entry[];
    try {
      entries = pr.next > last ? [] : this.log.slice(pr.next, last + 1, this.config.maxSizePerMsg);
    } catch (e) {
      // Storage is reading these entries from disk: send nothing now; retryAppends() will.
      if (e instanceof LogUnavailableError) return false;
      throw e;
    }
    if (entries.length === 0 && !sendIfEmpty) return false;
    this.send(
      this.message(MessageType.Append, to, {
        index: prevIndex,
        logTerm: prevTerm,
        entries,
        commit: this.log.committed,
      }),
    );
    let bytes = 0;
    for (const e of entries) bytes += entrySizeBytes(e);
    pr.sentEntries(entries.length, prevIndex + entries.length, bytes);
    return true;
  }

  private sendSnapshot(to: NodeId, pr: Progress): boolean {
    if (!pr.recentActive) return false;
    const snapshot = this.log.snapshot();
    assert(snapshot.metadata.index > 0, "need a snapshot but the storage has none");
    this.send(this.message(MessageType.Snapshot, to, { snapshot }));
    pr.becomeSnapshot(snapshot.metadata.index);
    return true;
  }

  /** Appends entries at the leader; the caller has already checked limits. */
  private appendEntries(entries: Entry[]): number {
    let index = this.log.lastIndex();
    const stamped = entries.map((e) => ({ ...e, term: this.term, index: ++index }));
    this.log.append(stamped);
    // Our own copy counts for the commit only when the host reports it durable (persistedTo).
    return index;
  }

  /**
   * The host's disk holds our log through (index, term). Only now does a leader count its own
   * copy towards the commit index, so the host may hand out the next Ready (and send, apply)
   * while a write is still on its way to disk without ever committing on a copy it could lose.
   */
  persistedTo(index: number, term: number): void {
    this.log.durableTo(index, term);
    if (this.role !== "leader") return;
    const pr = this.prs.get(this.id);
    if (pr === undefined || !pr.maybeUpdate(this.log.durableIndex())) return;
    if (this.maybeCommit()) {
      this.releasePendingReadIndex();
      this.bcastAppend();
    }
  }

  propose(type: EntryType, data: Uint8Array): number {
    if (this.role !== "leader") throw new ProposalDroppedError("not-leader", this.lead);
    // Only a leader wakes: a misdirected proposal must not restart a quiesced follower's clock.
    this.wake();
    if (!this.prs.has(this.id)) throw new ProposalDroppedError("not-leader", NONE);
    if (this.leadTransferee !== NONE) throw new ProposalDroppedError("transferring", this.lead);
    const entry: Entry = { term: this.term, index: 0, type, data };
    const size = entrySizeBytes(entry);
    if (size > this.config.maxUncommittedEntriesSize)
      throw new ProposalDroppedError("too-large", this.lead);
    if (
      this.uncommittedSize > 0 &&
      this.uncommittedSize + size > this.config.maxUncommittedEntriesSize
    ) {
      throw new ProposalDroppedError("uncommitted-limit", this.lead);
    }
    if (type === EntryType.ConfChange) {
      if (this.pendingConfIndex > this.log.applied)
        throw new ProposalDroppedError("conf-change-pending", this.lead);
    }
    this.uncommittedSize += size;
    const index = this.appendEntries([entry]);
    if (type === EntryType.ConfChange) this.pendingConfIndex = index;
    // Replicate lazily: proposals made before the next Ready leave as one Append per follower
    // (flushProposals), instead of one Append (and one log slice) per proposal per follower.
    this.proposalsUnsent = true;
    return index;
  }

  /** Sends the entries proposed since the last call to every follower whose progress allows it. */
  flushProposals(): void {
    if (!this.proposalsUnsent) return;
    this.proposalsUnsent = false;
    if (this.role !== "leader") return;
    for (const id of this.prs.keys()) {
      if (id === this.id) continue;
      // Fill the pipeline: several Appends when maxSizePerMsg splits the new entries.
      for (let i = 0; i < this.config.maxInflightMsgs && this.maybeSendAppend(id, false); i++);
    }
  }

  proposeConfChange(cc: ConfChange): number {
    return this.propose(EntryType.ConfChange, encodeConfChange(cc));
  }

  /** Committed entries were handed to the host: they no longer count as uncommitted. */
  reduceUncommittedSize(entries: readonly Entry[]): void {
    if (this.role !== "leader") return;
    for (const e of entries) {
      if (e.term === this.term)
        this.uncommittedSize = Math.max(0, this.uncommittedSize - entrySizeBytes(e));
    }
  }

  // ---------------------------------------------------------------- transfer

  transferLeadership(to: NodeId): void {
    this.wake();
    if (this.role === "leader") this.handleTransfer(to);
    else if (this.lead !== NONE)
      this.send(this.message(MessageType.TransferLeader, this.lead, { term: 0, index: to }));
  }

  private handleTransfer(transferee: NodeId): void {
    const pr = this.prs.get(transferee);
    if (pr === undefined || pr.isLearner || transferee === this.id) return;
    if (this.leadTransferee !== NONE) {
      if (this.leadTransferee === transferee) return;
      this.abortLeaderTransfer();
    }
    this.electionElapsed = 0; // the transfer must finish within one election timeout
    this.leadTransferee = transferee;
    if (pr.match === this.log.lastIndex())
      this.send(this.message(MessageType.TimeoutNow, transferee));
    else this.maybeSendAppend(transferee, true);
  }

  private abortLeaderTransfer(): void {
    this.leadTransferee = NONE;
  }

  // ---------------------------------------------------------------- read-index

  readIndex(context: Uint8Array): void {
    assert(
      context.byteLength <= READ_INDEX_CONTEXT_BYTES_MAX,
      () =>
        `read-index context of ${context.byteLength} bytes exceeds ${READ_INDEX_CONTEXT_BYTES_MAX}`,
    );
    this.wake();
    if (this.role === "leader") this.handleReadIndex(this.id, context);
    else if (this.lead !== NONE)
      this.send(this.message(MessageType.ReadIndex, this.lead, { term: 0, context }));
    // Otherwise there is no leader to ask; the host's read times out and retries.
  }

  private handleReadIndex(from: NodeId, context: Uint8Array): void {
    if (this.voters.length === 1 && this.voters[0] === this.id) {
      this.answerReadIndex(from, this.log.committed, context);
      return;
    }
    if (!this.committedInCurrentTerm()) {
      // A new leader does not know the commit index until its no-op commits.
      if (this.pendingReadIndex.length < PENDING_READ_INDEX_MAX)
        this.pendingReadIndex.push({ from, context });
      return;
    }
    if (!this.readOnly.add(this.log.committed, from, context)) return;
    this.readOnly.recvAck(this.id, context);
    this.bcastHeartbeat(context);
  }

  private committedInCurrentTerm(): boolean {
    return this.log.term(this.log.committed) === this.term;
  }

  private releasePendingReadIndex(): void {
    if (this.pendingReadIndex.length === 0 || !this.committedInCurrentTerm()) return;
    const pending = this.pendingReadIndex;
    this.pendingReadIndex = [];
    for (const p of pending) this.handleReadIndex(p.from, p.context);
  }

  private answerReadIndex(from: NodeId, index: number, context: Uint8Array): void {
    if (from === this.id || from === NONE) this.readStates.push({ index, context });
    else this.send(this.message(MessageType.ReadIndexResponse, from, { index, context }));
  }

  // ---------------------------------------------------------------- host reports

  /**
   * The host could not deliver a message to `id` (its connection broke or refused). A leader
   * probes it; a (pre-)candidate asks it again at the next slot (resendLostVoteRequests).
   */
  reportUnreachable(id: NodeId): void {
    const pr = this.prs.get(id);
    if (this.role === "leader" && pr && pr.state === "replicate") pr.becomeProbe();
    if (
      (this.role === "pre-candidate" || this.role === "candidate") &&
      this.voters.includes(id) &&
      !this.votes.has(id)
    )
      this.voteRequestsLost.add(id);
  }

  reportSnapshot(id: NodeId, ok: boolean): void {
    const pr = this.prs.get(id);
    if (this.role !== "leader" || pr === undefined || pr.state !== "snapshot") return;
    // On success wait for the follower's AppendResponse; on failure probe again (a fresh
    // snapshot is sent if still needed). Either way, probe is the next state.
    if (!ok) pr.pendingSnapshot = 0;
    pr.becomeProbe();
    pr.probeSent = true;
  }

  applyCommittedConfChange(entry: Entry): void {
    if (entry.type !== EntryType.ConfChange || entry.data.byteLength === 0) return;
    // A snapshot restored after this entry was handed to the host (its Ready still outstanding)
    // already holds its effect and every later change: applying it now would undo those
    // (simulator seed 340896: a node demoted itself to learner for good and never campaigned).
    if (entry.index <= this.confIndex) return;
    this.confIndex = entry.index;
    this.applyConfChange(decodeConfChange(entry.data));
  }
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}

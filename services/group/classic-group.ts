// One classic consumer group (Kafka's JoinGroup / SyncGroup / Heartbeat / LeaveGroup protocol)
// on the leader of its __consumer_offsets partition: Empty → PreparingRebalance →
// CompletingRebalance → Stable (Dead once deleted), generation ids, coordinator-made member ids
// with KIP-394's MEMBER_ID_REQUIRED, static members (group.instance.id, KIP-345), the leader's
// assignment handed out through SyncGroup, session / rebalance / sync timeouts and Kafka's
// initial rebalance delay. In memory, as in Kafka: only a completed rebalance (the generation
// with members and assignments) or an emptied group is written to the partition's Raft log
// (env.persist, classic-groups-state.ts), which commit fencing checks while applying and which a
// new leader starts from. Time comes from env.nowMs(); tick() fires expired deadlines. Every
// wait is bounded: a JoinGroup by the rebalance timeout, a SyncGroup by the rebalance timeout
// after the join completed, a KIP-394 pending member by its session timeout.
import type { ErrorName } from "../../libs/common/errors.js";
import type { ClassicGroupRecord } from "./classic-groups-state.js";

export type ClassicGroupState =
  "Empty" | "PreparingRebalance" | "CompletingRebalance" | "Stable" | "Dead";

export interface ClassicProtocol {
  readonly name: string;
  readonly metadata: Buffer;
}

export interface JoinRequest {
  readonly memberId: string;
  /** "" for a dynamic member. */
  readonly instanceId: string;
  readonly clientId: string;
  readonly clientHost: string;
  readonly sessionTimeoutMs: number;
  readonly rebalanceTimeoutMs: number;
  readonly protocolType: string;
  readonly protocols: readonly ClassicProtocol[];
  /** JoinGroup v4+: the client understands MEMBER_ID_REQUIRED (KIP-394). */
  readonly requireKnownMemberId: boolean;
}

export interface JoinedMember {
  readonly memberId: string;
  readonly instanceId: string;
  readonly metadata: Buffer;
}

export interface JoinOutcome {
  readonly error: ErrorName;
  readonly message: string;
  readonly generationId: number;
  readonly protocolType: string;
  readonly protocolName: string;
  readonly leader: string;
  readonly memberId: string;
  /** The leader's answer lists every member with its metadata; the others get none. */
  readonly members: readonly JoinedMember[];
}

export interface SyncRequest {
  readonly memberId: string;
  readonly instanceId: string;
  readonly generationId: number;
  /** SyncGroup v5+ only (null: not sent). */
  readonly protocolType: string | null;
  readonly protocolName: string | null;
  readonly assignments: ReadonlyArray<{ readonly memberId: string; readonly assignment: Buffer }>;
}

export interface SyncOutcome {
  readonly error: ErrorName;
  readonly message: string;
  readonly protocolType: string;
  readonly protocolName: string;
  readonly assignment: Buffer;
}

export interface MemberRef {
  readonly memberId: string;
  readonly instanceId: string;
}

export interface LeaveOutcome extends MemberRef {
  readonly error: ErrorName;
}

export interface GenerationRef {
  readonly generationId: number;
  readonly memberId: string;
  readonly groupInstanceId: string;
}

export interface ClassicGroupLimits {
  /** Kafka's group.min.session.timeout.ms / group.max.session.timeout.ms. */
  readonly sessionTimeoutMsMin: number;
  readonly sessionTimeoutMsMax: number;
  readonly rebalanceTimeoutMsMax: number;
  /** Members plus KIP-394 pending members. */
  readonly membersMax: number;
  /** Kafka's group.initial.rebalance.delay.ms: an empty group waits this long for more joins. */
  readonly initialRebalanceDelayMs: number;
  readonly protocolsMax: number;
  readonly memberBytesMax: number;
}

export interface ClassicGroupEnv {
  nowMs(): number;
  /** A fresh member id with this prefix (the client id, or the instance id of a static member). */
  newMemberId(prefix: string): string;
  /** Writes the record to the partition's Raft log; resolves with the apply outcome (never rejects). */
  persist(record: ClassicGroupRecord): Promise<{ error: ErrorName; message: string }>;
  readonly limits: ClassicGroupLimits;
}

export interface ClassicMemberView {
  readonly memberId: string;
  readonly instanceId: string;
  readonly clientId: string;
  readonly clientHost: string;
  readonly metadata: Buffer;
  readonly assignment: Buffer;
}

export interface ClassicGroupView {
  readonly groupId: string;
  readonly state: ClassicGroupState;
  readonly generationId: number;
  readonly protocolType: string;
  readonly protocolName: string;
  readonly leader: string;
  readonly members: readonly ClassicMemberView[];
}

interface Member {
  memberId: string;
  instanceId: string;
  clientId: string;
  clientHost: string;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  protocolType: string;
  protocols: ClassicProtocol[];
  assignment: Buffer;
  lastSeenMs: number;
  join: ((o: JoinOutcome) => void) | undefined;
  sync: ((o: SyncOutcome) => void) | undefined;
}

const EMPTY = Buffer.alloc(0);

export class ClassicGroup {
  state: ClassicGroupState = "Empty";
  generationId = 0;
  protocolType = "";
  protocolName = "";
  leader = "";
  /** Generation of the newest record the Raft log acknowledged (-1: none). */
  persistedGenerationId = -1;
  /** Join order (the first member leads when the leader is gone). */
  private readonly members = new Map<string, Member>();
  /** Instance id → member id of static members. */
  private readonly statics = new Map<string, string>();
  /** KIP-394: member ids handed out with MEMBER_ID_REQUIRED → deadline to rejoin with them. */
  private readonly pending = new Map<string, number>();
  private joinDeadlineMs = -1;
  private syncDeadlineMs = -1;
  /** Within the initial rebalance delay of a group that was empty (no early completion). */
  private initialDelay = false;
  private newMemberSinceDelay = false;
  private rebalanceStartMs = 0;
  /** The leader's SyncGroup is being written to the log (for this generation). */
  private syncing = false;
  private persistsInFlight = 0;

  constructor(
    readonly groupId: string,
    private readonly env: ClassicGroupEnv,
    record?: ClassicGroupRecord,
  ) {
    if (!record) return;
    // A new leader starts from the last completed rebalance; every member gets a full session.
    this.generationId = record.generationId;
    this.persistedGenerationId = record.generationId;
    this.protocolType = record.protocolType;
    if (record.members.length === 0) return;
    this.protocolName = record.protocolName;
    this.leader = record.leader;
    this.state = "Stable";
    const now = env.nowMs();
    for (const r of record.members) {
      const m: Member = {
        memberId: r.memberId,
        instanceId: r.instanceId,
        clientId: r.clientId,
        clientHost: r.clientHost,
        sessionTimeoutMs: r.sessionTimeoutMs,
        rebalanceTimeoutMs: r.rebalanceTimeoutMs,
        protocolType: record.protocolType,
        protocols: [{ name: record.protocolName, metadata: Buffer.from(r.metadata, "base64") }],
        assignment: Buffer.from(r.assignment, "base64"),
        lastSeenMs: now,
        join: undefined,
        sync: undefined,
      };
      this.members.set(m.memberId, m);
      if (m.instanceId !== "") this.statics.set(m.instanceId, m.memberId);
    }
  }

  get size(): number {
    return this.members.size;
  }

  has(memberId: string): boolean {
    return this.members.has(memberId);
  }

  /** Nothing in flight and nothing the log does not have: the group can be dropped from memory. */
  isIdle(): boolean {
    return (
      this.state === "Empty" &&
      this.pending.size === 0 &&
      this.persistsInFlight === 0 &&
      this.persistedGenerationId === this.generationId
    );
  }

  // ---- JoinGroup ----

  join(r: JoinRequest): Promise<JoinOutcome> {
    const now = this.env.nowMs();
    const refusal = this.checkJoin(r);
    if (refusal) return Promise.resolve(this.joinError(refusal.error, refusal.message, r.memberId));
    if (r.instanceId !== "") return this.joinStatic(r, now);
    if (r.memberId === "") {
      if (this.members.size + this.pending.size >= this.env.limits.membersMax) return this.full(r);
      const memberId = this.env.newMemberId(r.clientId);
      if (r.requireKnownMemberId) {
        this.pending.set(memberId, now + r.sessionTimeoutMs);
        return Promise.resolve(
          this.joinError(
            "MEMBER_ID_REQUIRED",
            "rejoin with the member id in this answer (KIP-394)",
            memberId,
          ),
        );
      }
      return this.addMember(r, memberId, now);
    }
    if (this.pending.delete(r.memberId)) return this.addMember(r, r.memberId, now);
    const m = this.members.get(r.memberId);
    if (!m)
      return Promise.resolve(
        this.joinError(
          "UNKNOWN_MEMBER_ID",
          `member ${r.memberId} is not in group ${this.groupId}`,
          r.memberId,
        ),
      );
    return this.rejoin(m, r, now);
  }

  private checkJoin(r: JoinRequest): { error: ErrorName; message: string } | undefined {
    const L = this.env.limits;
    if (this.state === "Dead")
      return { error: "COORDINATOR_NOT_AVAILABLE", message: `group ${this.groupId} was deleted` };
    if (r.sessionTimeoutMs < L.sessionTimeoutMsMin || r.sessionTimeoutMs > L.sessionTimeoutMsMax) {
      return {
        error: "INVALID_SESSION_TIMEOUT",
        message: `session timeout ${r.sessionTimeoutMs} ms is outside ${L.sessionTimeoutMsMin}..${L.sessionTimeoutMsMax}`,
      };
    }
    if (r.rebalanceTimeoutMs <= 0 || r.rebalanceTimeoutMs > L.rebalanceTimeoutMsMax) {
      return {
        error: "INVALID_REQUEST",
        message: `rebalance timeout ${r.rebalanceTimeoutMs} ms is outside 1..${L.rebalanceTimeoutMsMax}`,
      };
    }
    const bytes = r.protocols.reduce((n, p) => n + p.metadata.byteLength, 0);
    if (r.protocols.length > L.protocolsMax || bytes > L.memberBytesMax) {
      return {
        error: "INVALID_REQUEST",
        message: `at most ${L.protocolsMax} protocols and ${L.memberBytesMax} bytes of metadata`,
      };
    }
    if (r.protocolType === "" || r.protocols.length === 0)
      return {
        error: "INCONSISTENT_GROUP_PROTOCOL",
        message: "a member needs a protocol type and at least one protocol",
      };
    const others = [...this.members.values()].filter((m) => m.memberId !== r.memberId);
    if (others.length === 0) return undefined;
    if (r.protocolType !== this.protocolType)
      return {
        error: "INCONSISTENT_GROUP_PROTOCOL",
        message: `group ${this.groupId} has protocol type ${this.protocolType}, not ${r.protocolType}`,
      };
    const common = r.protocols.some((p) =>
      others.every((m) => m.protocols.some((q) => q.name === p.name)),
    );
    if (!common)
      return {
        error: "INCONSISTENT_GROUP_PROTOCOL",
        message: `none of ${r.protocols.map((p) => p.name).join(", ")} is supported by every member of ${this.groupId}`,
      };
    return undefined;
  }

  private full(r: JoinRequest): Promise<JoinOutcome> {
    return Promise.resolve(
      this.joinError(
        "GROUP_MAX_SIZE_REACHED",
        `group ${this.groupId} has ${this.members.size + this.pending.size} members (limit ${this.env.limits.membersMax})`,
        r.memberId,
      ),
    );
  }

  private joinStatic(r: JoinRequest, now: number): Promise<JoinOutcome> {
    const existingId = this.statics.get(r.instanceId);
    if (r.memberId !== "") {
      if (existingId === undefined)
        return Promise.resolve(
          this.joinError(
            "UNKNOWN_MEMBER_ID",
            `no static member with instance id ${r.instanceId}`,
            r.memberId,
          ),
        );
      if (existingId !== r.memberId)
        return Promise.resolve(
          this.joinError(
            "FENCED_INSTANCE_ID",
            `instance id ${r.instanceId} belongs to member ${existingId}`,
            r.memberId,
          ),
        );
      return this.rejoin(this.members.get(existingId)!, r, now);
    }
    if (existingId === undefined) {
      if (this.members.size + this.pending.size >= this.env.limits.membersMax) return this.full(r);
      return this.addMember(r, this.env.newMemberId(r.instanceId), now);
    }
    // A known instance id without a member id: a restarted process takes its old member's place
    // (its partitions included) under a new member id; the old one is fenced (KIP-345).
    const old = this.members.get(existingId)!;
    const wasLeader = old.memberId === this.leader;
    const changed = !sameProtocols(old.protocols, r.protocols);
    const m = this.replaceMemberId(old, this.env.newMemberId(r.instanceId));
    update(m, r, now);
    if (this.state === "Stable" && !changed) return this.persistStaticReplacement(m, wasLeader);
    const answer = this.waitJoin(m);
    if (this.state === "PreparingRebalance") this.tryCompleteJoin(now);
    else this.prepareRebalance(now);
    return answer;
  }

  private replaceMemberId(old: Member, memberId: string): Member {
    old.join?.(
      this.joinError(
        "FENCED_INSTANCE_ID",
        `instance id ${old.instanceId} rejoined as ${memberId}`,
        old.memberId,
      ),
    );
    old.sync?.(
      syncError("FENCED_INSTANCE_ID", `instance id ${old.instanceId} rejoined as ${memberId}`),
    );
    this.members.delete(old.memberId);
    const m: Member = { ...old, memberId, join: undefined, sync: undefined };
    this.members.set(memberId, m);
    this.statics.set(m.instanceId, memberId);
    if (this.leader === old.memberId) this.leader = memberId;
    return m;
  }

  /** A static member came back to a stable group unchanged: no rebalance; the log learns its new member id. */
  private async persistStaticReplacement(m: Member, wasLeader: boolean): Promise<JoinOutcome> {
    const generation = this.generationId;
    const result = await this.persistNow(this.record());
    if (result.error !== "NONE") {
      if (this.generationId === generation && this.members.has(m.memberId))
        this.prepareRebalance(this.env.nowMs());
      return this.joinError(result.error, result.message, m.memberId);
    }
    if (
      this.generationId !== generation ||
      this.state !== "Stable" ||
      !this.members.has(m.memberId)
    ) {
      return this.joinError(
        "REBALANCE_IN_PROGRESS",
        `group ${this.groupId} started a rebalance meanwhile`,
        m.memberId,
      );
    }
    return { ...this.joinOutcome(m), members: wasLeader ? this.memberList() : [] };
  }

  private addMember(r: JoinRequest, memberId: string, now: number): Promise<JoinOutcome> {
    if (this.members.size === 0) this.protocolType = r.protocolType;
    const m: Member = {
      memberId,
      instanceId: r.instanceId,
      clientId: r.clientId,
      clientHost: r.clientHost,
      sessionTimeoutMs: r.sessionTimeoutMs,
      rebalanceTimeoutMs: r.rebalanceTimeoutMs,
      protocolType: r.protocolType,
      protocols: [...r.protocols],
      assignment: EMPTY,
      lastSeenMs: now,
      join: undefined,
      sync: undefined,
    };
    this.members.set(memberId, m);
    if (m.instanceId !== "") this.statics.set(m.instanceId, memberId);
    const answer = this.waitJoin(m);
    if (this.state === "PreparingRebalance") {
      this.newMemberSinceDelay = true;
      this.tryCompleteJoin(now);
    } else this.prepareRebalance(now);
    return answer;
  }

  private rejoin(m: Member, r: JoinRequest, now: number): Promise<JoinOutcome> {
    const changed = !sameProtocols(m.protocols, r.protocols);
    m.lastSeenMs = now;
    switch (this.state) {
      case "PreparingRebalance": {
        update(m, r, now);
        const answer = this.waitJoin(m);
        this.tryCompleteJoin(now);
        return answer;
      }
      case "CompletingRebalance":
      case "Stable": {
        // The same join again (its answer was lost) gets the current generation back; a leader
        // rejoining a stable group, or a changed subscription, starts a rebalance (as Kafka).
        const leaderRejoin = this.state === "Stable" && m.memberId === this.leader;
        if (!changed && !leaderRejoin) return Promise.resolve(this.joinOutcome(m));
        update(m, r, now);
        const answer = this.waitJoin(m);
        this.prepareRebalance(now);
        return answer;
      }
      default:
        return Promise.resolve(
          this.joinError("UNKNOWN_MEMBER_ID", `group ${this.groupId} is ${this.state}`, m.memberId),
        );
    }
  }

  private waitJoin(m: Member): Promise<JoinOutcome> {
    // A newer JoinGroup of the same member replaces an older one still waiting.
    m.join?.(
      this.joinError(
        "REBALANCE_IN_PROGRESS",
        "superseded by a newer JoinGroup of the same member",
        m.memberId,
      ),
    );
    return new Promise((resolve) => {
      m.join = resolve;
    });
  }

  private prepareRebalance(now: number): void {
    if (this.state === "Dead") return;
    if (this.state === "CompletingRebalance")
      this.answerSyncs(
        syncError("REBALANCE_IN_PROGRESS", `group ${this.groupId} is rebalancing again`),
      );
    const wasEmpty = this.state === "Empty";
    this.state = "PreparingRebalance";
    this.syncDeadlineMs = -1;
    this.syncing = false;
    this.rebalanceStartMs = now;
    const timeoutMs = this.rebalanceTimeoutMs();
    const delayMs = this.env.limits.initialRebalanceDelayMs;
    this.initialDelay = wasEmpty && delayMs > 0;
    this.newMemberSinceDelay = false;
    this.joinDeadlineMs = now + (this.initialDelay ? Math.min(delayMs, timeoutMs) : timeoutMs);
    this.tryCompleteJoin(now);
  }

  private rebalanceTimeoutMs(): number {
    let max = 0;
    for (const m of this.members.values()) max = Math.max(max, m.rebalanceTimeoutMs);
    return max;
  }

  private tryCompleteJoin(now: number): void {
    if (this.state !== "PreparingRebalance" || this.initialDelay) return;
    if (this.pending.size > 0) return;
    for (const m of this.members.values()) if (!m.join) return;
    this.completeJoin(now);
  }

  /** The join phase ends: members that did not rejoin are out, the generation advances. */
  private completeJoin(now: number): void {
    for (const m of [...this.members.values()])
      if (!m.join) this.dropMember(m, "did not rejoin within the rebalance timeout");
    this.generationId++;
    this.initialDelay = false;
    this.joinDeadlineMs = -1;
    this.syncing = false;
    if (this.members.size === 0) {
      this.state = "Empty";
      this.protocolName = "";
      this.leader = "";
      void this.persistNow(this.record());
      return;
    }
    this.protocolName = this.selectProtocol();
    if (!this.members.has(this.leader)) this.leader = this.members.keys().next().value!;
    this.state = "CompletingRebalance";
    this.syncDeadlineMs = now + this.rebalanceTimeoutMs();
    for (const m of this.members.values()) {
      m.lastSeenMs = now;
      m.assignment = EMPTY;
      const answer = m.join!;
      m.join = undefined;
      answer(this.joinOutcome(m));
    }
  }

  /** Kafka's rule: among the protocols every member supports, each member votes for its most preferred. */
  private selectProtocol(): string {
    const members = [...this.members.values()];
    const candidates = members[0]!.protocols
      .map((p) => p.name)
      .filter((name) => members.every((m) => m.protocols.some((q) => q.name === name)));
    const votes = new Map<string, number>(candidates.map((c) => [c, 0]));
    for (const m of members) {
      const choice = m.protocols.find((p) => votes.has(p.name));
      if (choice) votes.set(choice.name, votes.get(choice.name)! + 1);
    }
    let best = candidates[0] ?? "";
    for (const c of candidates) if (votes.get(c)! > votes.get(best)!) best = c;
    return best;
  }

  private joinOutcome(m: Member): JoinOutcome {
    return {
      error: "NONE",
      message: "",
      generationId: this.generationId,
      protocolType: this.protocolType,
      protocolName: this.protocolName,
      leader: this.leader,
      memberId: m.memberId,
      members: m.memberId === this.leader ? this.memberList() : [],
    };
  }

  private memberList(): JoinedMember[] {
    return [...this.members.values()].map((m) => ({
      memberId: m.memberId,
      instanceId: m.instanceId,
      metadata: metadataFor(m, this.protocolName),
    }));
  }

  private joinError(error: ErrorName, message: string, memberId: string): JoinOutcome {
    return {
      error,
      message,
      generationId: -1,
      protocolType: this.protocolType,
      protocolName: "",
      leader: "",
      memberId,
      members: [],
    };
  }

  // ---- SyncGroup ----

  sync(r: SyncRequest): Promise<SyncOutcome> {
    const now = this.env.nowMs();
    const refusal = this.checkMember(r.memberId, r.instanceId, r.generationId);
    if (refusal) return Promise.resolve(syncError(refusal.error, refusal.message));
    if (
      (r.protocolType !== null && r.protocolType !== this.protocolType) ||
      (r.protocolName !== null && r.protocolName !== this.protocolName)
    ) {
      return Promise.resolve(
        syncError(
          "INCONSISTENT_GROUP_PROTOCOL",
          `group ${this.groupId} uses ${this.protocolType}/${this.protocolName}`,
        ),
      );
    }
    const m = this.members.get(r.memberId)!;
    m.lastSeenMs = now;
    if (this.state === "PreparingRebalance")
      return Promise.resolve(
        syncError("REBALANCE_IN_PROGRESS", `group ${this.groupId} is rebalancing`),
      );
    if (this.state === "Stable") return Promise.resolve(this.syncOutcome(m.assignment));
    const answer = new Promise<SyncOutcome>((resolve) => {
      m.sync?.(
        syncError("REBALANCE_IN_PROGRESS", "superseded by a newer SyncGroup of the same member"),
      );
      m.sync = resolve;
    });
    if (m.memberId === this.leader && !this.syncing) this.completeSync(r);
    return answer;
  }

  /** The leader's assignment goes to the log; once applied the group is Stable and every waiting member gets its part. */
  private completeSync(r: SyncRequest): void {
    const assignments = new Map<string, Buffer>();
    for (const a of r.assignments)
      if (this.members.has(a.memberId)) assignments.set(a.memberId, a.assignment);
    const tooLarge = [...assignments.values()].some(
      (a) => a.byteLength > this.env.limits.memberBytesMax,
    );
    if (tooLarge) {
      this.answerSyncs(
        syncError(
          "INVALID_REQUEST",
          `an assignment is larger than ${this.env.limits.memberBytesMax} bytes`,
        ),
      );
      this.prepareRebalance(this.env.nowMs());
      return;
    }
    this.syncing = true;
    const generation = this.generationId;
    void this.persistNow(this.record(assignments)).then((result) => {
      if (this.generationId !== generation || this.state !== "CompletingRebalance") return; // a rebalance answered the waiters meanwhile
      this.syncing = false;
      const now = this.env.nowMs();
      if (result.error !== "NONE") {
        this.answerSyncs(syncError(result.error, result.message));
        this.prepareRebalance(now);
        return;
      }
      this.state = "Stable";
      this.syncDeadlineMs = -1;
      for (const m of this.members.values()) {
        m.assignment = assignments.get(m.memberId) ?? EMPTY;
        m.lastSeenMs = now;
        const answer = m.sync;
        m.sync = undefined;
        answer?.(this.syncOutcome(m.assignment));
      }
    });
  }

  private syncOutcome(assignment: Buffer): SyncOutcome {
    return {
      error: "NONE",
      message: "",
      protocolType: this.protocolType,
      protocolName: this.protocolName,
      assignment,
    };
  }

  private answerSyncs(outcome: SyncOutcome): void {
    const now = this.env.nowMs();
    for (const m of this.members.values()) {
      const answer = m.sync;
      if (!answer) continue;
      // It was alive while it waited: its session restarts now.
      m.sync = undefined;
      m.lastSeenMs = now;
      answer(outcome);
    }
  }

  // ---- Heartbeat, LeaveGroup, commits ----

  heartbeat(
    memberId: string,
    instanceId: string,
    generationId: number,
  ): { error: ErrorName; message: string } {
    const refusal = this.checkMember(memberId, instanceId, generationId);
    if (refusal) return refusal;
    this.members.get(memberId)!.lastSeenMs = this.env.nowMs();
    if (this.state === "PreparingRebalance")
      return {
        error: "REBALANCE_IN_PROGRESS",
        message: `group ${this.groupId} is rebalancing: rejoin`,
      };
    return { error: "NONE", message: "" };
  }

  private checkMember(
    memberId: string,
    instanceId: string,
    generationId: number,
  ): { error: ErrorName; message: string } | undefined {
    if (this.state === "Dead")
      return { error: "COORDINATOR_NOT_AVAILABLE", message: `group ${this.groupId} was deleted` };
    if (instanceId !== "") {
      const holder = this.statics.get(instanceId);
      if (holder !== undefined && holder !== memberId)
        return {
          error: "FENCED_INSTANCE_ID",
          message: `instance id ${instanceId} belongs to member ${holder}`,
        };
    }
    if (!this.members.has(memberId))
      return {
        error: "UNKNOWN_MEMBER_ID",
        message: `member ${JSON.stringify(memberId)} is not in group ${this.groupId}`,
      };
    if (generationId !== this.generationId)
      return {
        error: "ILLEGAL_GENERATION",
        message: `generation ${generationId} is not the group's generation ${this.generationId}`,
      };
    return undefined;
  }

  leave(refs: readonly MemberRef[]): LeaveOutcome[] {
    const now = this.env.nowMs();
    return refs.map((ref) => ({ ...ref, error: this.leaveOne(ref, now) }));
  }

  private leaveOne(ref: MemberRef, now: number): ErrorName {
    let memberId = ref.memberId;
    if (ref.instanceId !== "") {
      const holder = this.statics.get(ref.instanceId);
      if (holder === undefined) return "UNKNOWN_MEMBER_ID";
      if (memberId !== "" && memberId !== holder) return "FENCED_INSTANCE_ID";
      memberId = holder;
    } else if (this.pending.delete(memberId)) {
      this.tryCompleteJoin(now);
      return "NONE";
    }
    const m = this.members.get(memberId);
    if (!m) return "UNKNOWN_MEMBER_ID";
    this.removeMember(m, now, "left the group");
    return "NONE";
  }

  /**
   * The leader-side check of an OffsetCommit (Kafka's REBALANCE_IN_PROGRESS and friends); the
   * state machine checks again, against the log's record, while applying.
   */
  checkCommit(
    f: GenerationRef,
    transactional: boolean,
  ): { error: ErrorName; message: string } | undefined {
    if (f.generationId < 0 && this.state === "Empty") return undefined;
    if (transactional && f.generationId < 0 && f.memberId === "" && f.groupInstanceId === "")
      return undefined;
    const refusal = this.checkMember(f.memberId, f.groupInstanceId, f.generationId);
    if (refusal) return refusal;
    if (this.state === "CompletingRebalance")
      return {
        error: "REBALANCE_IN_PROGRESS",
        message: `group ${this.groupId} is waiting for its leader's assignment`,
      };
    this.members.get(f.memberId)!.lastSeenMs = this.env.nowMs();
    return undefined;
  }

  // ---- timers ----

  /** Fires what is due: KIP-394 pending ids, sessions, the join deadline (and initial delay), the sync deadline. */
  tick(): void {
    if (this.state === "Dead") return;
    const now = this.env.nowMs();
    for (const [id, deadline] of this.pending) if (now >= deadline) this.pending.delete(id);
    for (const m of [...this.members.values()]) {
      // Members waiting for an answer are alive; the join and sync deadlines bound them.
      if (!m.join && !m.sync && now - m.lastSeenMs > m.sessionTimeoutMs)
        this.removeMember(m, now, "session timed out");
    }
    if (this.state === "PreparingRebalance" && now >= this.joinDeadlineMs) {
      const remainingMs = this.rebalanceStartMs + this.rebalanceTimeoutMs() - now;
      if (this.initialDelay && this.newMemberSinceDelay && remainingMs > 0) {
        this.newMemberSinceDelay = false;
        this.joinDeadlineMs = now + Math.min(this.env.limits.initialRebalanceDelayMs, remainingMs);
      } else {
        this.initialDelay = false;
        this.completeJoin(now);
      }
    } else this.tryCompleteJoin(now);
    if (this.state === "CompletingRebalance" && now >= this.syncDeadlineMs && !this.syncing) {
      // Members that never sent SyncGroup are out (Kafka's pending-sync timeout); the rest rejoin.
      for (const m of [...this.members.values()])
        if (!m.sync) this.dropMember(m, "did not send SyncGroup within the rebalance timeout");
      this.prepareRebalance(now);
    }
  }

  private removeMember(m: Member, now: number, why: string): void {
    this.dropMember(m, why);
    if (this.state === "Stable" || this.state === "CompletingRebalance") this.prepareRebalance(now);
    else this.tryCompleteJoin(now);
  }

  private dropMember(m: Member, why: string): void {
    this.members.delete(m.memberId);
    if (m.instanceId !== "" && this.statics.get(m.instanceId) === m.memberId)
      this.statics.delete(m.instanceId);
    m.join?.(this.joinError("UNKNOWN_MEMBER_ID", `member ${m.memberId} ${why}`, m.memberId));
    m.sync?.(syncError("UNKNOWN_MEMBER_ID", `member ${m.memberId} ${why}`));
    m.join = undefined;
    m.sync = undefined;
  }

  /** Leadership moved or the group was deleted: every waiting request is answered with the error. */
  close(error: ErrorName, message: string, dead = false): void {
    for (const m of this.members.values()) {
      m.join?.(this.joinError(error, message, m.memberId));
      m.sync?.(syncError(error, message));
      m.join = undefined;
      m.sync = undefined;
    }
    if (dead) this.state = "Dead";
  }

  // ---- the record and views ----

  private record(assignments?: ReadonlyMap<string, Buffer>): ClassicGroupRecord {
    const members = this.state === "Empty" ? [] : [...this.members.values()];
    return {
      groupId: this.groupId,
      generationId: this.generationId,
      protocolType: this.protocolType,
      protocolName: this.protocolName,
      leader: this.leader,
      members: members.map((m) => ({
        memberId: m.memberId,
        instanceId: m.instanceId,
        clientId: m.clientId,
        clientHost: m.clientHost,
        sessionTimeoutMs: m.sessionTimeoutMs,
        rebalanceTimeoutMs: m.rebalanceTimeoutMs,
        metadata: metadataFor(m, this.protocolName).toString("base64"),
        assignment: (assignments?.get(m.memberId) ?? m.assignment).toString("base64"),
      })),
    };
  }

  private async persistNow(
    record: ClassicGroupRecord,
  ): Promise<{ error: ErrorName; message: string }> {
    this.persistsInFlight++;
    try {
      const result = await this.env.persist(record);
      if (result.error === "NONE")
        this.persistedGenerationId = Math.max(this.persistedGenerationId, record.generationId);
      return result;
    } finally {
      this.persistsInFlight--;
    }
  }

  view(): ClassicGroupView {
    return {
      groupId: this.groupId,
      state: this.state,
      generationId: this.generationId,
      protocolType: this.protocolType,
      protocolName: this.protocolName,
      leader: this.leader,
      members: [...this.members.values()].map((m) => ({
        memberId: m.memberId,
        instanceId: m.instanceId,
        clientId: m.clientId,
        clientHost: m.clientHost,
        metadata: metadataFor(m, this.protocolName),
        assignment: m.assignment,
      })),
    };
  }
}

function update(m: Member, r: JoinRequest, now: number): void {
  m.protocols = [...r.protocols];
  m.protocolType = r.protocolType;
  m.sessionTimeoutMs = r.sessionTimeoutMs;
  m.rebalanceTimeoutMs = r.rebalanceTimeoutMs;
  m.clientId = r.clientId;
  m.clientHost = r.clientHost;
  m.lastSeenMs = now;
}

function sameProtocols(a: readonly ClassicProtocol[], b: readonly ClassicProtocol[]): boolean {
  return (
    a.length === b.length &&
    a.every((p, i) => p.name === b[i]!.name && p.metadata.equals(b[i]!.metadata))
  );
}

function metadataFor(m: Member, protocolName: string): Buffer {
  return m.protocols.find((p) => p.name === protocolName)?.metadata ?? EMPTY;
}

function syncError(error: ErrorName, message: string): SyncOutcome {
  return { error, message, protocolType: "", protocolName: "", assignment: EMPTY };
}

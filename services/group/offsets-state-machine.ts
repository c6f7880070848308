// The replicated state of one __consumer_offsets/N partition: committed offsets per
// (group, topic, partition), transactional offsets pending per producer id until their
// transaction's marker, and per producer id the newest producer epoch and coordinator epoch
// seen (for fencing). Pure and deterministic: apply() reads nothing but the entry.
import { assert } from "../../libs/common/assert.js";
import type { ErrorName } from "../../libs/common/errors.js";
import type { AppliedEntry, StateMachine } from "../../libs/raft-host/state-machine.js";
import {
  decodeEntry,
  type CommitEntry,
  type ExpireEntry,
  type GenerationFields,
  type MarkerEntry,
  type OffsetCommitItem,
  type TxnCommitEntry,
} from "./offsets-codec.js";
import {
  ConsumerGroups,
  type GroupJson,
  type GroupView,
  type HeartbeatResult,
} from "./consumer-groups.js";
import { ClassicGroupsState, type ClassicGroupRecord } from "./classic-groups-state.js";
import type { DeleteGroupEntry, HeartbeatEntry, OffsetDeleteEntry } from "./group-codec.js";
import { OFFSETS_LIMITS } from "./offsets-limits.js";
import {
  checkGroupId,
  checkItems,
  checkPartitionCount,
  checkProducer,
  tpKey,
  type Refusal,
} from "./offsets-validation.js";
import { isDecodeError } from "../../libs/common/decode-error.js";

export interface StoredOffset {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
  readonly leaderEpoch: number;
  readonly metadata: string;
  readonly commitTimestampMs: number;
  /** Raft index of the entry that wrote it: a transactional offset only replaces an older one. */
  readonly appendIndex: number;
}

interface PendingTxn {
  transactionalId: string;
  producerEpoch: number;
  /** Commit time of the first pending offset: how long the transaction has been open here. */
  readonly startedMs: number;
  /** group id → tpKey → offset. */
  readonly offsets: Map<string, Map<string, StoredOffset>>;
  count: number;
}

interface ProducerRecord {
  producerEpoch: number;
  coordinatorEpoch: number;
  lastUpdateMs: number;
  /** Markers applied for this producer, modulo 2^31: the transaction guard's clock (txnGuardOf). */
  markersApplied: number;
  /** The data epoch of the transaction the last marker ended (producer-state.ts lastEndedEpoch). */
  lastEndedEpoch: number;
}

const MARKER_COUNT_MODULUS = 0x80000000;

export interface PartitionOutcome {
  readonly topic: string;
  readonly partition: number;
  readonly error: ErrorName;
  readonly message: string;
}

/** What apply() returns to the proposer. */
export type OffsetsApplyResult =
  | {
      readonly type: "commit";
      readonly error: ErrorName;
      readonly message: string;
      readonly partitions: readonly PartitionOutcome[];
    }
  | {
      readonly type: "marker";
      readonly error: ErrorName;
      readonly message: string;
      readonly resolvedOffsets: number;
    }
  | { readonly type: "expire"; readonly offsetsRemoved: number; readonly producersRemoved: number }
  | HeartbeatResult
  | { readonly type: "group"; readonly error: ErrorName; readonly message: string }
  | {
      readonly type: "offset-delete";
      readonly error: ErrorName;
      readonly message: string;
      readonly partitions: readonly PartitionOutcome[];
    }
  | { readonly type: "noop" }
  | { readonly type: "invalid"; readonly error: "INVALID_REQUEST"; readonly message: string };

export interface FetchedOffset {
  readonly topic: string;
  readonly partition: number;
  /** -1n when the group has no committed offset for the partition. */
  readonly offset: bigint;
  readonly leaderEpoch: number;
  readonly metadata: string;
  /** -1 when none. */
  readonly commitTimestampMs: number;
  readonly error: ErrorName;
  readonly message: string;
}

export interface PendingTxnView {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly transactionalId: string;
  readonly groups: readonly string[];
  readonly offsetCount: number;
  readonly startedMs: number;
}

const SNAPSHOT_FORMAT_V1 = 1;
/** V2 adds consumer groups (membership); V1 snapshots restore with none. */
const SNAPSHOT_FORMAT_V2 = 2;

/** A group as ListGroups reports it: simple groups have committed offsets but no membership. */
export interface GroupListing {
  readonly groupId: string;
  readonly type: "consumer" | "classic" | "simple";
  readonly state: string;
  readonly members: number;
}

export class OffsetsStateMachine implements StateMachine<OffsetsApplyResult> {
  /** group id → tpKey → committed offset. */
  private committed = new Map<string, Map<string, StoredOffset>>();
  private committedCount = 0;
  /** producer id (decimal) → pending transactional offsets. */
  private pending = new Map<string, PendingTxn>();
  /** group id → tpKey → number of producers with a pending offset there (for require_stable). */
  private pendingIndex = new Map<string, Map<string, number>>();
  /** producer id (decimal) → fencing state, in least-recently-updated order. */
  private producers = new Map<string, ProducerRecord>();
  private lastApplied = 0;
  /** KIP-848 membership of the consumer groups of this partition. */
  readonly groups = new ConsumerGroups();
  /** Classic (JoinGroup/SyncGroup) groups: the outcome of each one's last rebalance. */
  readonly classic = new ClassicGroupsState();
  private readonly transactionEndListeners = new Set<(producerId: bigint | undefined) => void>();

  /**
   * Called for every accepted marker with its producer id (pending offsets or not), and with
   * undefined after restore: the broker forgets its add-partition verifications (txn-verifier.ts).
   */
  onTransactionEnd(listener: (producerId: bigint | undefined) => void): () => void {
    this.transactionEndListeners.add(listener);
    return () => this.transactionEndListeners.delete(listener);
  }

  apply(entry: AppliedEntry): OffsetsApplyResult {
    assert(
      entry.index > this.lastApplied,
      () => `entry ${entry.index} applied after ${this.lastApplied}`,
    );
    this.lastApplied = entry.index;
    if (entry.data.length === 0) return { type: "noop" };
    let decoded;
    try {
      decoded = decodeEntry(entry.data);
    } catch (e) {
      // A replica must not crash on a bad entry; every replica refuses it the same way.
      if (isDecodeError(e, "offsets"))
        return { type: "invalid", error: "INVALID_REQUEST", message: e.message };
      throw e;
    }
    switch (decoded.type) {
      case "commit":
        return this.applyCommit(decoded, entry.index);
      case "txn-commit":
        return this.applyTxnCommit(decoded, entry.index);
      case "marker":
        return this.applyMarker(decoded);
      case "expire":
        return this.applyExpire(decoded);
      case "group-heartbeat":
        return this.applyHeartbeat(decoded);
      case "group-fence":
        return this.groups.fence(decoded);
      case "group-delete":
        return this.applyDeleteGroup(decoded);
      case "offset-delete":
        return this.applyOffsetDelete(decoded);
      case "classic-group":
        return this.classic.apply(decoded, this.groups);
    }
  }

  /** A group id is classic or KIP-848, never both (Kafka 4's rule). */
  private applyHeartbeat(e: HeartbeatEntry): OffsetsApplyResult {
    const refused = this.classic.refuseConsumerHeartbeat(e);
    if (refused) return refused;
    const result = this.groups.heartbeat(e);
    if (result.error === "NONE") this.classic.dropEmpty(e.groupId);
    return result;
  }

  /** Commit fencing: by the classic group's recorded generation, else by the consumer group's member epochs. */
  private validateMember(
    groupId: string,
    f: GenerationFields,
    offsets: readonly OffsetCommitItem[],
    transactional: boolean,
  ): Refusal | undefined {
    const classic = this.classic.validateCommit(groupId, f, transactional);
    return classic === "not-classic" ? this.groups.validateCommit(groupId, f, offsets) : classic;
  }

  private applyCommit(e: CommitEntry, index: number): OffsetsApplyResult {
    const refusal =
      checkGroupId(e.groupId) ??
      checkPartitionCount(e.offsets.length) ??
      this.validateMember(e.groupId, e, e.offsets, false);
    if (refusal) return refuseCommit(refusal);
    const checks = checkItems(e.offsets);
    const partitions = e.offsets.map((item, i) => {
      const check = checks[i] ?? this.checkCapacity(e.groupId, item);
      if (check) return outcome(item, check);
      this.putCommitted(e.groupId, stored(item, e.timestampMs, index));
      return outcome(item, undefined);
    });
    return { type: "commit", error: "NONE", message: "", partitions };
  }

  private applyTxnCommit(e: TxnCommitEntry, index: number): OffsetsApplyResult {
    const refusal =
      checkProducer(e.transactionalId, e.producerId, e.producerEpoch) ??
      checkGroupId(e.groupId) ??
      checkPartitionCount(e.offsets.length) ??
      this.validateMember(e.groupId, e, e.offsets, true) ??
      this.checkProducerEpoch(e) ??
      this.checkTxnGuard(e);
    if (refusal) return refuseCommit(refusal);
    const pid = e.producerId.toString();
    const txn = this.pendingFor(pid, e);
    const checks = checkItems(e.offsets);
    const partitions = e.offsets.map((item, i) => {
      const check = checks[i] ?? this.checkPendingCapacity(txn, e.groupId, item);
      if (check) return outcome(item, check);
      this.putPending(txn, e.groupId, stored(item, e.timestampMs, index));
      return outcome(item, undefined);
    });
    if (txn.count === 0) this.pending.delete(pid);
    this.touchProducer(pid, e.producerEpoch, undefined, e.timestampMs);
    return { type: "commit", error: "NONE", message: "", partitions };
  }

  /** DeleteGroups: an empty group's membership and committed offsets go; pending transactional ones stay with their transaction. */
  private applyDeleteGroup(e: DeleteGroupEntry): OffsetsApplyResult {
    const known =
      this.committed.has(e.groupId) ||
      this.groups.get(e.groupId) !== undefined ||
      this.classic.get(e.groupId) !== undefined;
    if (!known)
      return {
        type: "group",
        error: "GROUP_ID_NOT_FOUND",
        message: `group ${JSON.stringify(e.groupId)} does not exist`,
      };
    const refusal = this.classic.delete(e.groupId) ?? this.groups.delete(e);
    if (refusal) return { type: "group", ...refusal };
    this.committedCount -= this.committed.get(e.groupId)?.size ?? 0;
    this.committed.delete(e.groupId);
    return { type: "group", error: "NONE", message: "" };
  }

  /** OffsetDelete: refused per partition while a member is subscribed to its topic (Kafka's rule). */
  private applyOffsetDelete(e: OffsetDeleteEntry): OffsetsApplyResult {
    const offsets = this.committed.get(e.groupId);
    if (!offsets && !this.groups.get(e.groupId) && !this.classic.get(e.groupId))
      return {
        type: "offset-delete",
        error: "GROUP_ID_NOT_FOUND",
        message: `group ${JSON.stringify(e.groupId)} does not exist`,
        partitions: [],
      };
    const partitions: PartitionOutcome[] = [];
    for (const [topic, ps] of e.partitions) {
      for (const partition of ps) {
        if (
          this.groups.isSubscribed(e.groupId, topic) ||
          this.classic.isSubscribed(e.groupId, topic)
        ) {
          partitions.push({
            topic,
            partition,
            error: "GROUP_SUBSCRIBED_TO_TOPIC",
            message: `a member of ${JSON.stringify(e.groupId)} is subscribed to ${topic}`,
          });
          continue;
        }
        if (offsets?.delete(tpKey(topic, partition))) this.committedCount--;
        partitions.push({ topic, partition, error: "NONE", message: "" });
      }
    }
    if (offsets?.size === 0) this.committed.delete(e.groupId);
    return { type: "offset-delete", error: "NONE", message: "", partitions };
  }

  private checkProducerEpoch(e: TxnCommitEntry): Refusal | undefined {
    const pid = e.producerId.toString();
    const record = this.producers.get(pid);
    if (record && e.producerEpoch < record.producerEpoch) {
      return {
        error: "PRODUCER_FENCED",
        message: `producer ${pid} epoch ${e.producerEpoch} is fenced by epoch ${record.producerEpoch}`,
      };
    }
    if (!record && this.producers.size >= OFFSETS_LIMITS.producersMax) {
      return {
        error: "THROTTLING_QUOTA_EXCEEDED",
        message: `this partition already tracks ${this.producers.size} producers`,
      };
    }
    return undefined;
  }

  /**
   * The replicated verification guard (as producer-state.ts checkTxnGuard): the leader took the
   * producer's marker count before it verified the transaction with the coordinator; a marker
   * applied since ended that transaction, and its offsets must not wait for the next one's.
   */
  private checkTxnGuard(e: TxnCommitEntry): Refusal | undefined {
    if (e.txnGuard === undefined) return undefined;
    const now = this.txnGuardOf(e.producerId);
    if (e.txnGuard === now) return undefined;
    // Only a marker that ended this epoch's transaction or a later one (see checkTxnGuard there).
    const ended = this.producers.get(e.producerId.toString())?.lastEndedEpoch ?? -1;
    if (ended < e.producerEpoch) return undefined;
    return {
      error: "INVALID_TXN_STATE",
      message: `producer ${e.producerId}: a transaction marker was applied here after this commit was admitted (guard ${e.txnGuard}, now ${now}); its transaction has ended`,
    };
  }

  private pendingFor(pid: string, e: TxnCommitEntry): PendingTxn {
    let txn = this.pending.get(pid);
    if (!txn) {
      txn = {
        transactionalId: e.transactionalId,
        producerEpoch: e.producerEpoch,
        startedMs: e.timestampMs,
        offsets: new Map(),
        count: 0,
      };
      this.pending.set(pid, txn);
    }
    // The coordinator ends a transaction (marker) before the producer may start the next, so
    // offsets of one pending producer id always belong to one transaction; keep the newest epoch.
    txn.producerEpoch = Math.max(txn.producerEpoch, e.producerEpoch);
    txn.transactionalId = e.transactionalId;
    return txn;
  }

  private applyMarker(e: MarkerEntry): OffsetsApplyResult {
    const pid = e.producerId.toString();
    const record = this.producers.get(pid);
    if (e.producerId < 0n || e.producerEpoch < 0 || e.coordinatorEpoch < 0) {
      return {
        type: "marker",
        error: "INVALID_REQUEST",
        message: "marker producer id, epoch and coordinator epoch must be non-negative",
        resolvedOffsets: 0,
      };
    }
    // Same order as the data partitions (producer-state.ts checkMarker): producer epoch first.
    if (record && e.producerEpoch < record.producerEpoch) {
      const message = `marker epoch ${e.producerEpoch} is older than producer ${pid}'s epoch ${record.producerEpoch}`;
      return { type: "marker", error: "INVALID_PRODUCER_EPOCH", message, resolvedOffsets: 0 };
    }
    if (record && e.coordinatorEpoch < record.coordinatorEpoch) {
      const message = `coordinator epoch ${e.coordinatorEpoch} is older than ${record.coordinatorEpoch} for producer ${pid}`;
      return {
        type: "marker",
        error: "TRANSACTION_COORDINATOR_FENCED",
        message,
        resolvedOffsets: 0,
      };
    }
    // A late copy of a bumped marker (as producer-state.ts checkMarker): its epoch already
    // belongs to the next transaction, whose offsets it must not resolve.
    if (e.epochBumped === true && record && e.producerEpoch === record.producerEpoch) {
      const open = this.pending.get(pid);
      if (open === undefined)
        return { type: "marker", error: "NONE", message: "", resolvedOffsets: 0 };
      const message = `marker with bumped epoch ${e.producerEpoch} would resolve the offsets that epoch committed since: a late copy of an earlier marker`;
      return { type: "marker", error: "INVALID_PRODUCER_EPOCH", message, resolvedOffsets: 0 };
    }
    const resolvedOffsets = this.resolvePending(pid, e.committed);
    this.touchProducer(
      pid,
      e.producerEpoch,
      e.coordinatorEpoch,
      e.timestampMs,
      e.producerEpoch - (e.epochBumped === true ? 1 : 0),
    );
    for (const listener of this.transactionEndListeners) listener(e.producerId);
    return { type: "marker", error: "NONE", message: "", resolvedOffsets };
  }

  /** Applies (COMMIT) or drops (ABORT) the producer's pending offsets; a repeated marker finds none. */
  private resolvePending(pid: string, committed: boolean): number {
    const txn = this.pending.get(pid);
    if (!txn) return 0;
    this.pending.delete(pid);
    for (const [groupId, offsets] of txn.offsets) {
      for (const [key, offset] of offsets) {
        this.unindexPending(groupId, key);
        if (!committed) continue;
        const current = this.committed.get(groupId)?.get(key);
        // Kafka's rule: the offset written later in the log wins.
        if (!current || current.appendIndex < offset.appendIndex)
          this.putCommitted(groupId, offset);
      }
    }
    return txn.count;
  }

  private applyExpire(e: ExpireEntry): OffsetsApplyResult {
    let offsetsRemoved = 0;
    for (const [groupId, offsets] of this.committed) {
      for (const [key, offset] of offsets) {
        if (offset.commitTimestampMs + e.offsetsRetentionMs > e.nowMs) continue;
        if (this.pendingIndex.get(groupId)?.has(key)) continue;
        offsets.delete(key);
        offsetsRemoved++;
      }
      if (offsets.size === 0) this.committed.delete(groupId);
    }
    this.committedCount -= offsetsRemoved;
    let producersRemoved = 0;
    for (const [pid, record] of this.producers) {
      // Least recently updated first: stop at the first one still fresh.
      if (record.lastUpdateMs + e.producerExpirationMs > e.nowMs) break;
      if (this.pending.has(pid)) continue;
      this.producers.delete(pid);
      producersRemoved++;
    }
    return { type: "expire", offsetsRemoved, producersRemoved };
  }

  private checkCapacity(groupId: string, item: OffsetCommitItem): Refusal | undefined {
    if (this.committedCount < OFFSETS_LIMITS.committedOffsetsMax) return undefined;
    if (this.committed.get(groupId)?.has(tpKey(item.topic, item.partition))) return undefined;
    return {
      error: "THROTTLING_QUOTA_EXCEEDED",
      message: `this partition already holds ${this.committedCount} committed offsets`,
    };
  }

  private checkPendingCapacity(
    txn: PendingTxn,
    groupId: string,
    item: OffsetCommitItem,
  ): Refusal | undefined {
    if (txn.count < OFFSETS_LIMITS.pendingOffsetsPerProducerMax) return undefined;
    if (txn.offsets.get(groupId)?.has(tpKey(item.topic, item.partition))) return undefined;
    return {
      error: "THROTTLING_QUOTA_EXCEEDED",
      message: `the transaction already holds ${txn.count} pending offsets`,
    };
  }

  private putCommitted(groupId: string, offset: StoredOffset): void {
    let offsets = this.committed.get(groupId);
    if (!offsets) {
      offsets = new Map();
      this.committed.set(groupId, offsets);
    }
    const key = tpKey(offset.topic, offset.partition);
    if (!offsets.has(key)) this.committedCount++;
    offsets.set(key, offset);
  }

  private putPending(txn: PendingTxn, groupId: string, offset: StoredOffset): void {
    let offsets = txn.offsets.get(groupId);
    if (!offsets) {
      offsets = new Map();
      txn.offsets.set(groupId, offsets);
    }
    const key = tpKey(offset.topic, offset.partition);
    if (!offsets.has(key)) {
      txn.count++;
      this.indexPending(groupId, key);
    }
    offsets.set(key, offset);
  }

  private indexPending(groupId: string, key: string): void {
    let index = this.pendingIndex.get(groupId);
    if (!index) {
      index = new Map();
      this.pendingIndex.set(groupId, index);
    }
    index.set(key, (index.get(key) ?? 0) + 1);
  }

  private unindexPending(groupId: string, key: string): void {
    const index = this.pendingIndex.get(groupId);
    const count = index?.get(key);
    assert(
      index && count !== undefined && count > 0,
      () => `pending index lacks ${groupId} ${key}`,
    );
    if (count === 1) index.delete(key);
    else index.set(key, count - 1);
    if (index.size === 0) this.pendingIndex.delete(groupId);
  }

  /** Moves the producer to the most-recently-updated end and raises its epochs. */
  private touchProducer(
    pid: string,
    producerEpoch: number,
    coordinatorEpoch: number | undefined,
    timestampMs: number,
    /** For a marker: the data epoch of the transaction it ended. */
    endedEpoch?: number,
  ): void {
    const old = this.producers.get(pid);
    this.producers.delete(pid);
    const markersApplied = old?.markersApplied ?? 0;
    const lastEndedEpoch = old?.lastEndedEpoch ?? -1;
    this.producers.set(pid, {
      producerEpoch: Math.max(old?.producerEpoch ?? -1, producerEpoch),
      coordinatorEpoch: Math.max(old?.coordinatorEpoch ?? -1, coordinatorEpoch ?? -1),
      lastUpdateMs: Math.max(old?.lastUpdateMs ?? 0, timestampMs),
      markersApplied:
        endedEpoch !== undefined ? (markersApplied + 1) % MARKER_COUNT_MODULUS : markersApplied,
      lastEndedEpoch: Math.max(lastEndedEpoch, endedEpoch ?? -1),
    });
  }

  // ---- reads (of applied state; the caller provides linearizability with readBarrier) ----

  /** OffsetFetch: the given partitions, or every partition of the group when omitted. */
  fetchOffsets(
    groupId: string,
    partitions: ReadonlyArray<{ topic: string; partition: number }> | undefined,
    requireStable: boolean,
  ): FetchedOffset[] {
    const committed = this.committed.get(groupId);
    const pendingIndex = this.pendingIndex.get(groupId);
    const wanted =
      partitions ?? this.allPartitions(committed, requireStable ? pendingIndex : undefined);
    return wanted.map(({ topic, partition }) => {
      const key = tpKey(topic, partition);
      if (requireStable && pendingIndex?.has(key)) {
        return {
          ...noOffset(topic, partition),
          error: "UNSTABLE_OFFSET_COMMIT",
          message: `a transactional offset commit for ${topic}-${partition} is pending`,
        };
      }
      const offset = committed?.get(key);
      if (!offset) return noOffset(topic, partition);
      const { leaderEpoch, metadata, commitTimestampMs } = offset;
      return {
        topic,
        partition,
        offset: offset.offset,
        leaderEpoch,
        metadata,
        commitTimestampMs,
        error: "NONE",
        message: "",
      };
    });
  }

  private allPartitions(
    committed: Map<string, StoredOffset> | undefined,
    pendingIndex: Map<string, number> | undefined,
  ): Array<{ topic: string; partition: number }> {
    const out = new Map<string, { topic: string; partition: number }>();
    for (const o of committed?.values() ?? [])
      out.set(tpKey(o.topic, o.partition), { topic: o.topic, partition: o.partition });
    for (const key of pendingIndex?.keys() ?? []) {
      const cut = key.lastIndexOf("\u0000");
      if (!out.has(key))
        out.set(key, { topic: key.slice(0, cut), partition: Number(key.slice(cut + 1)) });
    }
    return [...out.values()];
  }

  describeGroup(groupId: string): GroupView | undefined {
    return this.groups.describe(groupId);
  }

  /** Every group of this partition: with membership, or with committed offsets only. */
  listGroups(): GroupListing[] {
    const out = new Map<string, GroupListing>();
    for (const groupId of this.committed.keys())
      out.set(groupId, { groupId, type: "simple", state: "EMPTY", members: 0 });
    for (const groupId of this.groups.ids()) {
      const view = this.groups.describe(groupId)!;
      out.set(groupId, {
        groupId,
        type: "consumer",
        state: view.state,
        members: view.members.length,
      });
    }
    for (const groupId of this.classic.ids()) {
      const g = this.classic.get(groupId)!;
      out.set(groupId, {
        groupId,
        type: "classic",
        state: g.members.length > 0 ? "STABLE" : "EMPTY",
        members: g.members.length,
      });
    }
    return [...out.values()].sort((a, b) =>
      a.groupId < b.groupId ? -1 : a.groupId > b.groupId ? 1 : 0,
    );
  }

  /** Transactions with pending offsets here, oldest first (for hanging-transaction tooling). */
  pendingTransactions(): PendingTxnView[] {
    return [...this.pending].map(([pid, txn]) => ({
      producerId: BigInt(pid),
      producerEpoch: txn.producerEpoch,
      transactionalId: txn.transactionalId,
      groups: [...txn.offsets.keys()],
      offsetCount: txn.count,
      startedMs: txn.startedMs,
    }));
  }

  /** The guard a leader takes before it verifies a TxnOffsetCommit (checkTxnGuard). */
  txnGuardOf(producerId: bigint): number {
    return this.producers.get(producerId.toString())?.markersApplied ?? 0;
  }

  producerEpochs(
    producerId: bigint,
  ): { producerEpoch: number; coordinatorEpoch: number } | undefined {
    const record = this.producers.get(producerId.toString());
    return record
      ? { producerEpoch: record.producerEpoch, coordinatorEpoch: record.coordinatorEpoch }
      : undefined;
  }

  stats(): {
    groups: number;
    committedOffsets: number;
    pendingProducers: number;
    producers: number;
    appliedIndex: number;
  } {
    return {
      groups: this.committed.size,
      committedOffsets: this.committedCount,
      pendingProducers: this.pending.size,
      producers: this.producers.size,
      appliedIndex: this.lastApplied,
    };
  }

  // ---- snapshots ----

  snapshot(): Uint8Array {
    const committed = [...this.committed].map(([groupId, offsets]) => [
      groupId,
      [...offsets.values()].map(offsetRow),
    ]);
    const pending = [...this.pending].map(([pid, txn]) => [
      pid,
      txn.transactionalId,
      txn.producerEpoch,
      txn.startedMs,
      [...txn.offsets].map(([groupId, offsets]) => [groupId, [...offsets.values()].map(offsetRow)]),
    ]);
    const producers = [...this.producers].map(([pid, r]) => [
      pid,
      r.producerEpoch,
      r.coordinatorEpoch,
      r.lastUpdateMs,
      r.markersApplied,
      r.lastEndedEpoch,
    ]);
    const consumerGroups = this.groups.snapshotRows();
    const classicGroups = this.classic.snapshotRows();
    const json = JSON.stringify({
      format: SNAPSHOT_FORMAT_V2,
      lastApplied: this.lastApplied,
      committed,
      pending,
      producers,
      consumerGroups,
      classicGroups,
    });
    return new TextEncoder().encode(json);
  }

  restore(data: Uint8Array, index: number): void {
    const snap = JSON.parse(new TextDecoder().decode(data)) as SnapshotJson;
    assert(
      snap.format === SNAPSHOT_FORMAT_V1 || snap.format === SNAPSHOT_FORMAT_V2,
      () => `unknown offsets snapshot format ${snap.format}`,
    );
    this.groups.restoreRows(snap.consumerGroups ?? []);
    this.classic.restoreRows(snap.classicGroups ?? []);
    this.committed = new Map();
    this.committedCount = 0;
    this.pending = new Map();
    this.pendingIndex = new Map();
    this.producers = new Map();
    for (const [groupId, rows] of snap.committed)
      for (const row of rows) this.putCommitted(groupId, parseOffsetRow(row));
    for (const [pid, transactionalId, producerEpoch, startedMs, groups] of snap.pending) {
      const txn: PendingTxn = {
        transactionalId,
        producerEpoch,
        startedMs,
        offsets: new Map(),
        count: 0,
      };
      this.pending.set(pid, txn);
      for (const [groupId, rows] of groups)
        for (const row of rows) this.putPending(txn, groupId, parseOffsetRow(row));
    }
    for (const [
      pid,
      producerEpoch,
      coordinatorEpoch,
      lastUpdateMs,
      markersApplied,
      lastEndedEpoch,
    ] of snap.producers) {
      this.producers.set(pid, {
        producerEpoch,
        coordinatorEpoch,
        lastUpdateMs,
        // Snapshots taken before guards existed: no entry of theirs carries a guard to compare.
        markersApplied: markersApplied ?? 0,
        lastEndedEpoch: lastEndedEpoch ?? -1,
      });
    }
    assert(
      snap.lastApplied <= index,
      () => `snapshot applied ${snap.lastApplied} is past its index ${index}`,
    );
    this.lastApplied = index;
    for (const listener of this.transactionEndListeners) listener(undefined);
  }
}

type OffsetRow = [string, number, string, number, string, number, number];

interface SnapshotJson {
  format: number;
  lastApplied: number;
  committed: Array<[string, OffsetRow[]]>;
  pending: Array<[string, string, number, number, Array<[string, OffsetRow[]]>]>;
  producers: Array<[string, number, number, number, number?, number?]>;
  /** V2 only. */
  consumerGroups?: GroupJson[];
  /** Optional in V2: snapshots written before classic groups restore with none. */
  classicGroups?: ClassicGroupRecord[];
}

function offsetRow(o: StoredOffset): OffsetRow {
  return [
    o.topic,
    o.partition,
    o.offset.toString(),
    o.leaderEpoch,
    o.metadata,
    o.commitTimestampMs,
    o.appendIndex,
  ];
}

function parseOffsetRow(row: OffsetRow): StoredOffset {
  const [topic, partition, offset, leaderEpoch, metadata, commitTimestampMs, appendIndex] = row;
  return {
    topic,
    partition,
    offset: BigInt(offset),
    leaderEpoch,
    metadata,
    commitTimestampMs,
    appendIndex,
  };
}

function stored(
  item: OffsetCommitItem,
  commitTimestampMs: number,
  appendIndex: number,
): StoredOffset {
  return {
    topic: item.topic,
    partition: item.partition,
    offset: item.offset,
    leaderEpoch: item.leaderEpoch,
    metadata: item.metadata,
    commitTimestampMs,
    appendIndex,
  };
}

function outcome(item: OffsetCommitItem, refusal: Refusal | undefined): PartitionOutcome {
  return {
    topic: item.topic,
    partition: item.partition,
    error: refusal?.error ?? "NONE",
    message: refusal?.message ?? "",
  };
}

function refuseCommit(refusal: Refusal): OffsetsApplyResult {
  return { type: "commit", error: refusal.error, message: refusal.message, partitions: [] };
}

function noOffset(topic: string, partition: number): FetchedOffset {
  return {
    topic,
    partition,
    offset: -1n,
    leaderEpoch: -1,
    metadata: "",
    commitTimestampMs: -1,
    error: "NONE",
    message: "",
  };
}

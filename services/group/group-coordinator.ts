// The group coordinator on a broker: serves tern.v1.GroupCoordinator for the groups whose
// __consumer_offsets partition this broker leads, and applies transaction markers routed to
// those partitions by the broker's WriteTxnMarkers handler. Every change is a Raft proposal
// to the partition's group; answers come from the applied state.
import type * as grpc from "@grpc/grpc-js";
import type { SchedulingClock, TimerHandle } from "../../libs/runtime/scheduler.js";
import { errorSpec, isTernError, TernError, type ErrorName } from "../../libs/common/errors.js";
import { toGrpcError } from "../../libs/common/grpc-errors.js";
import type { Failpoints } from "../../libs/common/failpoints.js";
import type { Logger } from "../../libs/common/logger.js";
import { loadTernProto, serviceDefinition } from "../../libs/common/proto.js";
import {
  findTopic,
  internalPartitionCount,
  internalPartitionOf,
} from "../../libs/metadata/lookup.js";
import { CONSUMER_OFFSETS_TOPIC } from "../../libs/metadata/types.js";
import type { RaftGroup } from "../../libs/raft-host/api.js";
import type {
  ClusterMetadataView,
  OffsetsMarkerWriter,
  OffsetsPartitionHost,
  TransactionEndListener,
  TxnPartitionVerifier,
} from "./ports.js";
import { encodeEntry, type GenerationFields, type OffsetsEntry } from "./offsets-codec.js";
import { OFFSETS_RETENTION_MS_DEFAULT, PRODUCER_EXPIRATION_MS_DEFAULT } from "./offsets-limits.js";
import {
  OffsetsStateMachine,
  type OffsetsApplyResult,
  type PartitionOutcome,
} from "./offsets-state-machine.js";
import {
  type CurrentMember,
  GroupMembership,
  type WireHeartbeatRequest,
  type WireHeartbeatResponse,
} from "./group-membership.js";
import type { GroupView } from "./consumer-groups.js";
import { ClassicCoordinator } from "./classic-coordinator.js";
import { classicDescribe, classicListing } from "./classic-describe.js";
import {
  checkGroupId,
  checkPartitionCount,
  checkProducer,
  type Refusal,
} from "./offsets-validation.js";
import {
  fetchedOffset,
  parseCommitPartitions,
  parseProducerId,
  partitionResult,
  type ParsedItem,
  type WireFetchedOffset,
  type WireOffsetCommitRequest,
  type WireOffsetFetchRequest,
  type WirePartitionResult,
  type WireTxnOffsetCommitRequest,
} from "./offsets-wire.js";

export interface GroupCoordinatorOptions {
  /** Where the __consumer_offsets partitions' Raft groups are (the broker's raft host). */
  readonly host: OffsetsPartitionHost;
  readonly logger: Logger;
  readonly metadata: ClusterMetadataView;
  readonly nodeId: number;
  /**
   * Commit times, session and rebalance deadlines, and every timer (expiry, session sweep,
   * classic groups' tick): the process runtime's; a ManualClock in tests.
   */
  readonly clock: SchedulingClock;
  /** Bound on each Raft proposal / read barrier. */
  readonly requestTimeoutMs?: number;
  /** When given, TxnOffsetCommit is refused unless AddOffsetsToTxn added the group's partition (V2: asks it to add it). */
  readonly verifyTxnPartition?: TxnPartitionVerifier;
  readonly onTransactionEnd?: TransactionEndListener;
  /** How often the leader of each partition proposes an expiry entry (0 = never). */
  readonly expireIntervalMs?: number;
  readonly offsetsRetentionMs?: number;
  readonly producerExpirationMs?: number;
  /** Consumer-group session timeout (Kafka's group.consumer.session.timeout.ms, default 45 s). */
  readonly groupSessionTimeoutMs?: number;
  /** Heartbeat interval told to members (group.consumer.heartbeat.interval.ms, default 5 s). */
  readonly groupHeartbeatIntervalMs?: number;
  /** Called after every membership change that went through the log (metrics). */
  readonly onRebalance?: (groupId: string) => void;
  /** Kafka's group.initial.rebalance.delay.ms for classic groups (default 3 s). */
  readonly classicInitialRebalanceDelayMs?: number;
  /** The process's failpoints (ctx.runtime.failpoints); none armed when absent. */
  readonly failpoints?: Failpoints | undefined;
}

export interface MarkerToApply {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly committed: boolean;
  readonly coordinatorEpoch: number;
  /** offsets-codec.ts MarkerEntry.epochBumped. */
  readonly epochBumped?: boolean;
}

export interface MarkerOutcome {
  readonly error: ErrorName;
  /** Numeric ErrorCode of error. */
  readonly code: number;
  readonly message: string;
}

/** tern.v1.GroupCoordinator, ready to add to the process's gRPC server. */
export interface GroupServiceBinding {
  readonly definition: grpc.ServiceDefinition;
  readonly implementation: grpc.UntypedServiceImplementation;
}

export interface GroupCoordinator {
  readonly service: GroupServiceBinding;
  /**
   * The state machine to open __consumer_offsets/<partition> with: while that group is open
   * here, always the same instance (the handlers read it); a fresh one otherwise.
   */
  stateMachineFor(partition: number): OffsetsStateMachine;
  /** Applies a WriteTxnMarkers marker to __consumer_offsets/<partition> through its Raft log. */
  proposeMarker(partition: number, marker: MarkerToApply): Promise<MarkerOutcome>;
  /** proposeMarker in the shape of the broker's marker hook (ports.ts). */
  readonly offsetsMarkerWriter: OffsetsMarkerWriter;
  offsetCommit(request: WireOffsetCommitRequest): Promise<{ partitions: WirePartitionResult[] }>;
  offsetFetch(request: WireOffsetFetchRequest): Promise<{ partitions: WireFetchedOffset[] }>;
  txnOffsetCommit(
    request: WireTxnOffsetCommitRequest,
  ): Promise<{ partitions: WirePartitionResult[] }>;
  consumerGroupHeartbeat(
    request: WireHeartbeatRequest,
    clientHost?: string,
  ): Promise<WireHeartbeatResponse>;
  /** A consumer group member's current fields (what a Kafka heartbeat leaves null); undefined for no such member. */
  consumerGroupMember(groupId: string, memberId: string): CurrentMember | undefined;
  /** A KIP-848 consumer group after a read barrier; undefined when no consumer group has this id. */
  consumerGroup(groupId: string): Promise<GroupView | undefined>;
  /** Deletes a group without members and its offsets (GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP). */
  deleteGroup(groupId: string): Promise<void>;
  /** Deletes a group's committed offsets of partitions no member subscribes to. */
  offsetDelete(request: {
    groupId?: string;
    partitions?: Array<{ topic?: string; partition?: number }>;
  }): Promise<{ partitions: WirePartitionResult[] }>;
  /** Groups of the partitions this broker leads, with their membership (metrics). */
  ledGroups(): Array<{ partition: number; groups: GroupView[] }>;
  /** The state machines of the offsets partitions this broker leads (metrics). */
  ledMachines(): OffsetsStateMachine[];
  /** Classic groups (JoinGroup/SyncGroup/Heartbeat/LeaveGroup, served by the Kafka listener). */
  readonly classic: ClassicCoordinator;
  /** Groups of the partitions this broker leads, classic ones included (Kafka's ListGroups). */
  listGroups(): Array<{
    groupId: string;
    type: string;
    state: string;
    members: number;
    protocolType: string;
  }>;
  /** Stops the expiry timer. */
  close(): void;
}

const REQUEST_TIMEOUT_MS_DEFAULT = 10_000;
const EXPIRE_INTERVAL_MS_DEFAULT = 10 * 60 * 1000;
const SERVICE_NAME = "tern.v1.GroupCoordinator";

export function offsetsGroupId(partition: number): string {
  return `${CONSUMER_OFFSETS_TOPIC}/${partition}`;
}

export function createGroupCoordinator(options: GroupCoordinatorOptions): GroupCoordinator {
  const coordinator = new GroupCoordinatorImpl(options);
  return {
    service: coordinator.binding(),
    stateMachineFor: (p) => coordinator.stateMachineFor(p),
    proposeMarker: (p, m) => coordinator.proposeMarker(p, m),
    offsetsMarkerWriter: async (p, m) => {
      const { producerId, producerEpoch, coordinatorEpoch, epochBumped } = m;
      const outcome = await coordinator.proposeMarker(p, {
        producerId,
        producerEpoch,
        coordinatorEpoch,
        committed: m.controlType === "COMMIT",
        epochBumped,
      });
      return { error: outcome.error, message: outcome.message };
    },
    offsetCommit: (r) => coordinator.offsetCommit(r),
    offsetFetch: (r) => coordinator.offsetFetch(r),
    txnOffsetCommit: (r) => coordinator.txnOffsetCommit(r),
    consumerGroupHeartbeat: (r, host) => coordinator.membership.heartbeat(r, host ?? ""),
    consumerGroupMember: (g, m) => coordinator.membership.currentMember(g, m),
    consumerGroup: (g) => coordinator.consumerGroup(g),
    deleteGroup: async (g) => {
      await coordinator.deleteGroup(g);
    },
    offsetDelete: (r) => coordinator.offsetDelete(r),
    ledGroups: () => coordinator.ledGroups(),
    ledMachines: () => [...coordinator.ledPartitionsPublic()].map((p) => p.machine),
    classic: coordinator.classic,
    listGroups: () => coordinator.listGroupsWithProtocol(),
    close: () => coordinator.close(),
  };
}

class GroupCoordinatorImpl {
  private readonly machines = new Map<number, OffsetsStateMachine>();
  private readonly clock: SchedulingClock;
  private readonly timeoutMs: number;
  private readonly log: Logger;
  private readonly expireTimer: TimerHandle | undefined;
  private expiring = false;
  readonly membership: GroupMembership;
  readonly classic: ClassicCoordinator;

  constructor(private readonly options: GroupCoordinatorOptions) {
    this.clock = options.clock;
    this.timeoutMs = options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS_DEFAULT;
    this.log = options.logger.child({ component: "group-coordinator" });
    this.membership = new GroupMembership({
      logger: options.logger,
      clock: this.clock,
      metadata: options.metadata,
      coordinatorFor: (groupId) => this.coordinatorFor(groupId),
      stateMachineFor: (p) => this.stateMachineFor(p),
      ledPartitions: () => this.ledPartitions(),
      propose: async (group, data) =>
        (
          await raftCall(() =>
            group.propose<OffsetsApplyResult>(data, { timeoutMs: this.timeoutMs }),
          )
        ).result,
      ...(options.groupSessionTimeoutMs !== undefined
        ? { sessionTimeoutMs: options.groupSessionTimeoutMs }
        : {}),
      ...(options.groupHeartbeatIntervalMs !== undefined
        ? { heartbeatIntervalMs: options.groupHeartbeatIntervalMs }
        : {}),
      ...(options.onRebalance ? { onRebalance: options.onRebalance } : {}),
    });
    this.classic = new ClassicCoordinator({
      logger: options.logger,
      clock: this.clock,
      coordinatorFor: (groupId) => this.coordinatorFor(groupId),
      stateMachineFor: (p) => this.stateMachineFor(p),
      ledPartitions: () => this.ledPartitions(),
      propose: async (group, data) =>
        (
          await raftCall(() =>
            group.propose<OffsetsApplyResult>(data, { timeoutMs: this.timeoutMs }),
          )
        ).result,
      readBarrier: (group) => raftCall(() => group.readBarrier({ timeoutMs: this.timeoutMs })),
      ...(options.classicInitialRebalanceDelayMs !== undefined
        ? { limits: { initialRebalanceDelayMs: options.classicInitialRebalanceDelayMs } }
        : {}),
      ...(options.onRebalance ? { onRebalance: options.onRebalance } : {}),
    });
    const intervalMs = options.expireIntervalMs ?? EXPIRE_INTERVAL_MS_DEFAULT;
    if (intervalMs > 0) {
      this.expireTimer = this.clock.setInterval(() => void this.expireOnce(), intervalMs);
    }
  }

  binding(): GroupServiceBinding {
    const definition = serviceDefinition(loadTernProto(), SERVICE_NAME);
    if (!definition) throw new Error(`${SERVICE_NAME} missing from the loaded proto files`);
    return {
      definition,
      implementation: {
        OffsetCommit: unary((r: WireOffsetCommitRequest) => this.offsetCommit(r), this.log),
        OffsetFetch: unary((r: WireOffsetFetchRequest) => this.offsetFetch(r), this.log),
        TxnOffsetCommit: unary(
          (r: WireTxnOffsetCommitRequest) => this.txnOffsetCommit(r),
          this.log,
        ),
        ConsumerGroupHeartbeat: unaryWithPeer(
          (r: WireHeartbeatRequest, peer) => this.membership.heartbeat(r, peer),
          this.log,
        ),
        ConsumerGroupDescribe: unary(
          (r: { groupId?: string }) => this.describe(r.groupId ?? ""),
          this.log,
        ),
        ListGroups: unary(() => Promise.resolve({ groups: this.listGroups() }), this.log),
        DeleteGroups: unary(
          (r: { groupId?: string }) => this.deleteGroup(r.groupId ?? ""),
          this.log,
        ),
        OffsetDelete: unary(
          (r: { groupId?: string; partitions?: Array<{ topic?: string; partition?: number }> }) =>
            this.offsetDelete(r),
          this.log,
        ),
      },
    };
  }

  stateMachineFor(partition: number): OffsetsStateMachine {
    // The count is the topic's in cluster metadata; before metadata arrives only the sign is checked.
    const count =
      internalPartitionCount(this.options.metadata(), CONSUMER_OFFSETS_TOPIC) ?? Infinity;
    if (!Number.isInteger(partition) || partition < 0 || partition >= count) {
      throw new RangeError(`__consumer_offsets partition ${partition} outside 0..${count - 1}`);
    }
    let machine = this.machines.get(partition);
    // A partition whose group is not open here (never opened, or dropped when its replica moved
    // away) gets a fresh machine: the host restores it from the snapshot and log it opens with.
    if (!machine || !this.options.host.group(offsetsGroupId(partition))) {
      machine = new OffsetsStateMachine();
      const onTransactionEnd = this.options.onTransactionEnd;
      if (onTransactionEnd !== undefined)
        machine.onTransactionEnd((producerId) => onTransactionEnd(partition, producerId));
      this.machines.set(partition, machine);
    }
    return machine;
  }

  async offsetCommit(
    request: WireOffsetCommitRequest,
  ): Promise<{ partitions: WirePartitionResult[] }> {
    const groupId = request.groupId ?? "";
    const generation = generationOf(request);
    // Member fencing (KIP-848) is decided while applying, in log order with membership changes.
    refuseIf(checkGroupId(groupId) ?? checkPartitionCount(request.partitions?.length ?? 0));
    const { group, partition } = this.coordinatorFor(groupId);
    const parsed = this.withTopicChecks(parseCommitPartitions(request.partitions));
    await this.checkMemberWithoutProposal(group, partition, groupId, generation, parsed);
    const entry = (offsets: OffsetCommitItemList): OffsetsEntry => ({
      type: "commit",
      groupId,
      ...generation,
      timestampMs: this.clock.nowMs(),
      offsets,
    });
    return { partitions: await this.proposeCommit(group, parsed, entry) };
  }

  async txnOffsetCommit(
    request: WireTxnOffsetCommitRequest,
  ): Promise<{ partitions: WirePartitionResult[] }> {
    const groupId = request.groupId ?? "";
    const transactionalId = request.transactionalId ?? "";
    const producerId = parseProducerId(request.producerId);
    const producerEpoch = request.producerEpoch ?? -1;
    const generation = generationOf(request);
    refuseIf(
      checkProducer(transactionalId, producerId, producerEpoch) ??
        checkGroupId(groupId) ??
        checkPartitionCount(request.partitions?.length ?? 0),
    );
    const { group, partition } = this.coordinatorFor(groupId);
    // Taken before the coordinator is asked: apply refuses the commit if a marker came since.
    const txnGuard = this.stateMachineFor(partition).txnGuardOf(producerId);
    await this.verifyAdded(
      transactionalId,
      producerId,
      producerEpoch,
      partition,
      request.addOffsetsToTxn === true ? "add" : "verify",
    );
    const parsed = this.withTopicChecks(parseCommitPartitions(request.partitions));
    await this.checkMemberWithoutProposal(group, partition, groupId, generation, parsed);
    const entry = (offsets: OffsetCommitItemList): OffsetsEntry => ({
      type: "txn-commit",
      transactionalId,
      groupId,
      producerId,
      producerEpoch,
      txnGuard,
      ...generation,
      timestampMs: this.clock.nowMs(),
      offsets,
    });
    const partitions = await this.proposeCommit(group, parsed, entry);
    this.options.failpoints?.crash("group.after-txn-offset-commit");
    return { partitions };
  }

  async offsetFetch(request: WireOffsetFetchRequest): Promise<{ partitions: WireFetchedOffset[] }> {
    const groupId = request.groupId ?? "";
    const wanted = (request.partitions ?? []).map((p) => ({
      topic: p.topic ?? "",
      partition: p.partition ?? 0,
    }));
    refuseIf(checkGroupId(groupId) ?? checkPartitionCount(wanted.length));
    const { group, partition } = this.coordinatorFor(groupId);
    await raftCall(() => group.readBarrier({ timeoutMs: this.timeoutMs }));
    const machine = this.stateMachineFor(partition);
    const fetched = machine.fetchOffsets(
      groupId,
      wanted.length > 0 ? wanted : undefined,
      request.requireStable ?? false,
    );
    return { partitions: fetched.map(fetchedOffset) };
  }

  async proposeMarker(partition: number, marker: MarkerToApply): Promise<MarkerOutcome> {
    const group = this.options.host.group(offsetsGroupId(partition));
    if (!group)
      return outcomeOf(
        "NOT_LEADER_OR_FOLLOWER",
        `this broker hosts no replica of ${offsetsGroupId(partition)}`,
      );
    if (!group.isLeader())
      return outcomeOf(
        "NOT_LEADER_OR_FOLLOWER",
        `this broker does not lead ${offsetsGroupId(partition)} (leader ${group.leader()})`,
      );
    const entry: OffsetsEntry = { type: "marker", ...marker, timestampMs: this.clock.nowMs() };
    try {
      const { result } = await group.propose<OffsetsApplyResult>(encodeEntry(entry), {
        timeoutMs: this.timeoutMs,
      });
      if (result.type !== "marker")
        return outcomeOf("UNKNOWN_SERVER_ERROR", `unexpected apply result ${result.type}`);
      if (result.error === "NONE")
        this.log.debug(
          {
            partition,
            producerId: String(marker.producerId),
            committed: marker.committed,
            resolvedOffsets: result.resolvedOffsets,
          },
          "marker applied",
        );
      return outcomeOf(result.error, result.message);
    } catch (e) {
      if (isTernError(e)) return outcomeOf(e.errorName, e.message);
      this.log.error({ err: e, partition }, "marker proposal failed");
      return outcomeOf("UNKNOWN_SERVER_ERROR", String(e));
    }
  }

  close(): void {
    this.clock.clearInterval(this.expireTimer);
    this.membership.close();
    this.classic.close();
  }

  /** The offsets partitions this broker leads, with their state machines. */
  private *ledPartitions(): Iterable<{
    partition: number;
    group: RaftGroup;
    machine: OffsetsStateMachine;
  }> {
    for (const [partition, machine] of this.machines) {
      const group = this.options.host.group(offsetsGroupId(partition));
      if (group?.isLeader()) yield { partition, group, machine };
    }
  }

  ledPartitionsPublic(): Iterable<{
    partition: number;
    group: RaftGroup;
    machine: OffsetsStateMachine;
  }> {
    return this.ledPartitions();
  }

  ledGroups(): Array<{ partition: number; groups: GroupView[] }> {
    return [...this.ledPartitions()].map(({ partition, machine }) => ({
      partition,
      groups: machine.groups.ids().map((id) => machine.groups.describe(id)!),
    }));
  }

  async consumerGroup(groupId: string): Promise<GroupView | undefined> {
    refuseIf(checkGroupId(groupId));
    const { group, partition } = this.coordinatorFor(groupId);
    await raftCall(() => group.readBarrier({ timeoutMs: this.timeoutMs }));
    return this.stateMachineFor(partition).describeGroup(groupId);
  }

  private async describe(groupId: string): Promise<Record<string, unknown>> {
    refuseIf(checkGroupId(groupId));
    const { group, partition } = this.coordinatorFor(groupId);
    await raftCall(() => group.readBarrier({ timeoutMs: this.timeoutMs }));
    const machine = this.stateMachineFor(partition);
    const view = machine.describeGroup(groupId);
    const coordinator = this.options.nodeId;
    const classic = view ? undefined : await this.classic.describe(groupId);
    if (classic) return { ...classicDescribe(classic), coordinator };
    if (!view) {
      if (machine.fetchOffsets(groupId, undefined, false).length === 0)
        throw new TernError(
          "GROUP_ID_NOT_FOUND",
          `group ${JSON.stringify(groupId)} does not exist`,
        );
      return {
        groupId,
        type: "simple",
        state: "EMPTY",
        groupEpoch: 0,
        assignmentEpoch: 0,
        assignor: "",
        rebalances: "0",
        members: [],
        coordinator,
      };
    }
    const tps = (
      rows: ReadonlyArray<[string, number[]]>,
    ): Array<{ topic: string; partitions: number[] }> =>
      rows.map(([topic, partitions]) => ({ topic, partitions }));
    return {
      groupId,
      type: "consumer",
      state: view.state,
      groupEpoch: view.groupEpoch,
      assignmentEpoch: view.assignmentEpoch,
      assignor: view.assignor,
      rebalances: String(view.rebalances),
      coordinator,
      members: view.members.map((m) => ({
        memberId: m.memberId,
        instanceId: m.instanceId,
        clientId: m.clientId,
        clientHost: m.clientHost,
        memberEpoch: m.memberEpoch,
        state: m.state,
        subscribedTopicNames: m.subscribedTopicNames,
        subscribedTopicRegex: m.subscribedTopicRegex,
        assignment: tps(m.assigned),
        pendingRevocation: tps(m.pendingRevocation),
        targetAssignment: tps(m.target),
      })),
    };
  }

  private listGroups(): Array<{ groupId: string; type: string; state: string; members: number }> {
    return this.listGroupsWithProtocol();
  }

  /** The log's view of every group; classic groups as their leader-side state shows them now. */
  listGroupsWithProtocol(): Array<{
    groupId: string;
    type: string;
    state: string;
    members: number;
    protocolType: string;
  }> {
    const out = new Map<
      string,
      { groupId: string; type: string; state: string; members: number; protocolType: string }
    >();
    for (const { machine } of this.ledPartitions()) {
      for (const g of machine.listGroups()) {
        const protocolType =
          g.type === "classic"
            ? (machine.classic.get(g.groupId)?.protocolType ?? "")
            : g.type === "consumer"
              ? "consumer"
              : "";
        out.set(g.groupId, { ...g, protocolType });
      }
    }
    for (const v of this.classic.views()) out.set(v.groupId, classicListing(v));
    return [...out.values()];
  }

  async deleteGroup(groupId: string): Promise<Record<string, never>> {
    refuseIf(checkGroupId(groupId));
    const { group } = this.coordinatorFor(groupId);
    await this.classic.checkDeletable(groupId);
    const { result } = await raftCall(() =>
      group.propose<OffsetsApplyResult>(encodeEntry({ type: "group-delete", groupId }), {
        timeoutMs: this.timeoutMs,
      }),
    );
    if (result.type !== "group")
      throw new TernError("UNKNOWN_SERVER_ERROR", `unexpected apply result ${result.type}`);
    refuseIf(
      result.error === "NONE" ? undefined : { error: result.error, message: result.message },
    );
    this.classic.forget(groupId);
    return {};
  }

  async offsetDelete(r: {
    groupId?: string;
    partitions?: Array<{ topic?: string; partition?: number }>;
  }): Promise<{ partitions: WirePartitionResult[] }> {
    const groupId = r.groupId ?? "";
    refuseIf(checkGroupId(groupId) ?? checkPartitionCount(r.partitions?.length ?? 0));
    const { group } = this.coordinatorFor(groupId);
    const byTopic = new Map<string, number[]>();
    for (const p of r.partitions ?? []) {
      const list = byTopic.get(p.topic ?? "") ?? [];
      list.push(p.partition ?? 0);
      byTopic.set(p.topic ?? "", list);
    }
    const { result } = await raftCall(() =>
      group.propose<OffsetsApplyResult>(
        encodeEntry({ type: "offset-delete", groupId, partitions: [...byTopic] }),
        { timeoutMs: this.timeoutMs },
      ),
    );
    if (result.type !== "offset-delete")
      throw new TernError("UNKNOWN_SERVER_ERROR", `unexpected apply result ${result.type}`);
    refuseIf(
      result.error === "NONE" ? undefined : { error: result.error, message: result.message },
    );
    return { partitions: result.partitions.map(partitionResult) };
  }

  /** The partition of a group and its Raft group, which this broker must lead. */
  private coordinatorFor(groupId: string): { group: RaftGroup; partition: number } {
    const partition = internalPartitionOf(this.options.metadata(), CONSUMER_OFFSETS_TOPIC, groupId);
    const group = this.options.host.group(offsetsGroupId(partition));
    if (!group || !group.isLeader()) {
      throw new TernError(
        "NOT_COORDINATOR",
        `broker ${this.options.nodeId} is not the coordinator of group ${JSON.stringify(groupId)} (${offsetsGroupId(partition)})`,
        { partition },
      );
    }
    return { group, partition };
  }

  private async verifyAdded(
    transactionalId: string,
    producerId: bigint,
    producerEpoch: number,
    partition: number,
    mode: "verify" | "add",
  ): Promise<void> {
    const verify = this.options.verifyTxnPartition;
    if (!verify) return;
    const answer = await verify({
      transactionalId,
      producerId,
      producerEpoch,
      topic: CONSUMER_OFFSETS_TOPIC,
      partition,
      ...(mode === "add" ? { mode } : {}),
    });
    if (answer.error !== "NONE") {
      throw new TernError(
        answer.error,
        mode === "add"
          ? `transaction of ${JSON.stringify(transactionalId)} could not add ${offsetsGroupId(partition)}: ${answer.message}`
          : `transaction of ${JSON.stringify(transactionalId)} has not added ${offsetsGroupId(partition)} (call AddOffsetsToTxn first): ${answer.message}`,
      );
    }
  }

  /** Refuses partitions of topics that cluster metadata says do not exist (when metadata is known). */
  private withTopicChecks(parsed: ParsedItem[]): ParsedItem[] {
    const metadata = this.options.metadata();
    if (!metadata) return parsed;
    return parsed.map((p) => {
      if (p.refusal) return p;
      const topic = findTopic(metadata, p.item.topic);
      if (topic && topic.partitions.some((x) => x.partition === p.item.partition)) return p;
      return {
        item: p.item,
        refusal: {
          error: "UNKNOWN_TOPIC_OR_PARTITION",
          message: `topic-partition ${p.item.topic}-${p.item.partition} does not exist`,
        },
      };
    });
  }

  /**
   * A commit with nothing to propose still answers the member check (fencing is otherwise
   * decided while applying): against the applied state after a read barrier.
   */
  private async checkMemberWithoutProposal(
    group: RaftGroup,
    partition: number,
    groupId: string,
    generation: GenerationFields,
    parsed: ParsedItem[],
  ): Promise<void> {
    if (parsed.some((p) => !p.refusal)) return;
    await raftCall(() => group.readBarrier({ timeoutMs: this.timeoutMs }));
    refuseIf(this.stateMachineFor(partition).groups.validateCommit(groupId, generation));
  }

  /** Proposes the acceptable items as one entry and merges their outcomes with the refusals, in request order. */
  private async proposeCommit(
    group: RaftGroup,
    parsed: ParsedItem[],
    entry: (offsets: OffsetCommitItemList) => OffsetsEntry,
  ): Promise<WirePartitionResult[]> {
    const accepted = parsed.filter((p) => !p.refusal).map((p) => p.item);
    let outcomes: readonly PartitionOutcome[] = [];
    if (accepted.length > 0) {
      const { result } = await raftCall(() =>
        group.propose<OffsetsApplyResult>(encodeEntry(entry(accepted)), {
          timeoutMs: this.timeoutMs,
        }),
      );
      if (result.type !== "commit")
        throw new TernError("UNKNOWN_SERVER_ERROR", `unexpected apply result ${result.type}`);
      refuseIf(
        result.error === "NONE" ? undefined : { error: result.error, message: result.message },
      );
      outcomes = result.partitions;
    }
    let next = 0;
    return parsed.map((p) => {
      if (p.refusal)
        return partitionResult({
          topic: p.item.topic,
          partition: p.item.partition,
          error: p.refusal.error,
          message: p.refusal.message,
        });
      return partitionResult(outcomes[next++]!);
    });
  }

  /** The leader of each offsets partition proposes an expiry entry now and then (one at a time). */
  private async expireOnce(): Promise<void> {
    if (this.expiring) return;
    this.expiring = true;
    try {
      for (const partition of [...this.machines.keys()].sort((a, b) => a - b)) {
        const group = this.options.host.group(offsetsGroupId(partition));
        if (!group?.isLeader()) continue;
        const entry: OffsetsEntry = {
          type: "expire",
          nowMs: this.clock.nowMs(),
          offsetsRetentionMs: this.options.offsetsRetentionMs ?? OFFSETS_RETENTION_MS_DEFAULT,
          producerExpirationMs: this.options.producerExpirationMs ?? PRODUCER_EXPIRATION_MS_DEFAULT,
        };
        const { result } = await group.propose<OffsetsApplyResult>(encodeEntry(entry), {
          timeoutMs: this.timeoutMs,
        });
        if (result.type === "expire" && result.offsetsRemoved + result.producersRemoved > 0)
          this.log.info({ partition, ...result }, "expired offsets and producers");
      }
    } catch (e) {
      this.log.warn({ err: e }, "offsets expiry round stopped; the next round retries");
    } finally {
      this.expiring = false;
    }
  }
}

type OffsetCommitItemList = ParsedItem["item"][];

function generationOf(request: WireOffsetCommitRequest): {
  generationId: number;
  memberId: string;
  groupInstanceId: string;
} {
  // Proto3 default 0 would mean "generation 0"; clients of simple groups must send -1.
  return {
    generationId: request.generationId ?? -1,
    memberId: request.memberId ?? "",
    groupInstanceId: request.groupInstanceId ?? "",
  };
}

function refuseIf(refusal: Refusal | undefined): void {
  if (refusal) throw new TernError(refusal.error, refusal.message);
}

/** Raft errors as group-coordinator errors: losing leadership means "not the coordinator". */
async function raftCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (e) {
    if (isTernError(e, "NOT_LEADER_OR_FOLLOWER"))
      throw new TernError("NOT_COORDINATOR", e.message, e.details, { cause: e });
    throw e;
  }
}

function peerHost(peer: string): string {
  // "ipv4:127.0.0.1:5000", "ipv6:[::1]:5000" or "127.0.0.1:5000".
  const bare = peer.replace(/^ipv[46]:/, "");
  const cut = bare.lastIndexOf(":");
  return (cut > 0 ? bare.slice(0, cut) : bare).replace(/^\[|\]$/g, "");
}

function outcomeOf(error: ErrorName, message: string): MarkerOutcome {
  return { error, code: errorSpec(error).code, message };
}

function unary<Req, Res>(
  handler: (request: Req) => Promise<Res>,
  log: Logger,
): grpc.handleUnaryCall<Req, Res> {
  return unaryWithPeer((request: Req) => handler(request), log);
}

/** A handler that also gets the caller's host (gRPC peer address without the port). */
function unaryWithPeer<Req, Res>(
  handler: (request: Req, peerHost: string) => Promise<Res>,
  log: Logger,
): grpc.handleUnaryCall<Req, Res> {
  return (call, callback) => {
    handler(call.request, peerHost(call.getPeer())).then(
      (response) => callback(null, response),
      (e: unknown) => {
        const error = isTernError(e)
          ? e
          : new TernError("UNKNOWN_SERVER_ERROR", String(e), {}, { cause: e });
        if (!isTernError(e)) log.error({ err: e }, "group coordinator request failed");
        callback(toGrpcError(error), null);
      },
    );
  };
}

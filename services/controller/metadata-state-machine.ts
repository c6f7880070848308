// The replicated state of the __controller Raft group: nodes and their leases, topics and
// replica placement, leaders as reported by the hosts, the producer-id cursor. Deterministic:
// apply() reads no clock (the leader stamps nowMs into commands) and iterates in sorted order,
// so every controller holds the same state after the same entries. Invalid commands change
// nothing and answer with an ErrorCode name and a message.
import type { PeerAddress } from "../../libs/common/config.js";
import type { ErrorName } from "../../libs/common/errors.js";
import type { AppliedEntry, StateMachine } from "../../libs/raft-host/state-machine.js";
import type { ClusterMetadata, NodeInfo, Role, TopicInfo } from "../../libs/metadata/types.js";
import {
  type Command,
  decodeCommand,
  type InternalTopicSpec,
  type LeaderReport,
  type TopicIdAssignment,
  type TopicRequest,
} from "./command-codec.js";
import { isTopicId } from "../../libs/metadata/topic-id.js";
import {
  loadOf,
  type NodeLoad,
  placePartitions,
  type PlacementNode,
  replaceReplicas,
} from "./placement.js";
import { ProducerIdBlocks } from "./producer-id-blocks.js";
import {
  aclEntries,
  aclStoreFromSnapshot,
  createAcls,
  deleteAcls,
  newAclStore,
  type AclCreationResult,
  type AclDeletionResult,
  type AclStore,
} from "./acl-store.js";
import {
  type ScramCredentialStore,
  newScramStore,
  alterScram,
  scramStoreFromSnapshot,
  scramStoreSnapshot,
  type ScramResult,
} from "./scram-users.js";
import {
  alterClientQuotas,
  clientQuotaEntries,
  clientQuotaStoreFromSnapshot,
  newClientQuotaStore,
  type ClientQuotaStore,
} from "./client-quotas.js";
import type { ItemError } from "./item-error.js";
import {
  checkPartitionCount,
  checkReplicationFactor,
  checkTopicConfig,
  checkTopicName,
} from "./topic-rules.js";
import {
  alteredConfig,
  checkPartitionIncrease,
  type ConfigAlteration,
  type PartitionIncrease,
} from "./topic-alterations.js";
import { isDecodeError } from "../../libs/common/decode-error.js";
import { NO_ERROR } from "./item-error.js";

export const NODES_MAX = 1_000;
export const TOPICS_MAX = 10_000;
export const TOPICS_PER_REQUEST_MAX = 1_000;
export const LEADER_REPORTS_PER_REQUEST_MAX = 10_000;
const ADDRESS_LENGTH_MAX = 255;
const INCARNATION_LENGTH_MAX = 128;
const RACK_LENGTH_MAX = 128;
const LEASE_MS_MAX = 10 * 60_000;
/** A heartbeat is written once less than this fraction of its lease is left (heartbeatNeedsWrite). */
const LEASE_RENEW_AT_FRACTION = 0.5;
const NODE_ID_MAX = 1_000_000;
const SNAPSHOT_FORMAT = 1;

export interface NodeRecord {
  nodeId: number;
  role: Role;
  address: string;
  rack: string | undefined;
  kafkaAddress?: string | undefined;
  incarnation: string;
  alive: boolean;
  leaseDeadlineMs: number;
  /** Controller time the node was marked dead; -1 while alive. */
  deadSinceMs: number;
}

export interface PartitionRecord {
  partition: number;
  replicas: number[];
  leader: number;
  leaderTerm: number;
}

export interface TopicRecord {
  name: string;
  /** Kafka's topic id; undefined for a topic created before ids, until a tick assigns one. */
  id?: string | undefined;
  internal: boolean;
  role: Role;
  partitions: PartitionRecord[];
  config: Record<string, string>;
}

export interface CommandError {
  readonly error: ErrorName;
  readonly message: string;
}

export interface TopicResult {
  readonly name: string;
  /** NONE (NO_ERROR) when the topic was created, deleted or changed. */
  readonly error: CommandError;
  readonly topic?: TopicInfo;
}

/** What apply() returns, by command type; `error` set means nothing changed. */
export type CommandResult =
  | {
      readonly type:
        | "register"
        | "heartbeat"
        | "markDead"
        | "reportLeaders"
        | "setController"
        | "removeController"
        | "setControllerDirectory";
      readonly error?: CommandError;
    }
  | {
      readonly type: "tick";
      readonly expired: number;
      readonly created: number;
      readonly moved: number;
    }
  | { readonly type: "createTopics"; readonly results: readonly TopicResult[] }
  | { readonly type: "deleteTopics"; readonly results: readonly TopicResult[] }
  | { readonly type: "alterConfigs" | "createPartitions"; readonly results: readonly TopicResult[] }
  | {
      readonly type: "allocateProducerIds";
      readonly error?: CommandError;
      readonly firstProducerId?: bigint;
      readonly count?: number;
    }
  | { readonly type: "alterScram"; readonly outcomes: readonly ScramResult[] }
  | { readonly type: "createAcls"; readonly outcomes: readonly AclCreationResult[] }
  | { readonly type: "deleteAcls"; readonly outcomes: readonly AclDeletionResult[] }
  | { readonly type: "alterClientQuotas"; readonly outcomes: readonly ItemError[] }
  | { readonly type: "invalid"; readonly error: CommandError }
  | { readonly type: "noop" };

interface TickPlan {
  readonly expire: NodeRecord[];
  readonly create: Array<{ spec: InternalTopicSpec; replicas: number[][] }>;
  readonly moves: Array<{ topic: TopicRecord; partition: PartitionRecord; replicas: number[] }>;
  /** Existing topics without an id that this tick's entry carries one for. */
  readonly ids: Array<{ topic: TopicRecord; id: string }>;
}

const nodeKey = (role: Role, nodeId: number): string => `${role}:${nodeId}`;
const fail = (error: ErrorName, message: string): CommandError => ({ error, message });

/**
 * The answer to a topic request whose list is not 1..TOPICS_PER_REQUEST_MAX long (or empty,
 * where that is a no-op), else undefined.
 */
function topicCountRefusal(
  list: readonly unknown[],
  verb: "create" | "delete" | "alter" | "grow",
  { emptyAllowed }: { emptyAllowed: boolean },
): TopicResult[] | undefined {
  const fits = Array.isArray(list) && list.length <= TOPICS_PER_REQUEST_MAX;
  if (fits && (emptyAllowed || list.length > 0)) return undefined;
  const message = `a request may ${verb} 1..${TOPICS_PER_REQUEST_MAX} topics`;
  return [{ name: "", error: fail("INVALID_REQUEST", message) }];
}

export class MetadataStateMachine implements StateMachine<CommandResult> {
  private nodes = new Map<string, NodeRecord>();
  private topics = new Map<string, TopicRecord>();
  private producerIds = new ProducerIdBlocks();
  /** Controller quorum changes made at runtime: id -> address, or null once removed. */
  private controllerOverrides = new Map<number, string | null>();
  /** The data-directory id each controller recorded (KIP-853's voter directory id). */
  private controllerDirectories = new Map<number, string>();
  /** SCRAM users: "user\u0000mechanism" -> credential (scram-users.ts). */
  private scram: ScramCredentialStore = newScramStore();
  /** ACL bindings (acl-store.ts), keyed by every field. */
  private acls: AclStore = newAclStore();
  /** Client quotas (client-quotas.ts), keyed by entity. */
  private quotas: ClientQuotaStore = newClientQuotaStore();
  /** Highest leader-stamped time seen: controller time only moves forward. */
  private clockMs = 0;
  /** Index of the last entry that changed the visible metadata. */
  private versionIndex = 0;
  private applied = 0;
  private readonly listeners = new Set<(version: bigint) => void>();

  apply(entry: AppliedEntry): CommandResult {
    this.applied = entry.index;
    if (entry.data.length === 0) return { type: "noop" };
    let command: Command;
    try {
      command = decodeCommand(entry.data);
    } catch (e) {
      if (isDecodeError(e, "command"))
        return { type: "invalid", error: fail("INVALID_REQUEST", e.message) };
      throw e;
    }
    const before = this.versionIndex;
    const result = this.dispatch(command, entry.index);
    if (this.versionIndex !== before) this.notify();
    return result;
  }

  private dispatch(c: Command, index: number): CommandResult {
    switch (c.type) {
      case "register":
        return { type: c.type, ...this.register(c, index) };
      case "heartbeat":
        return { type: c.type, ...this.heartbeat(c, index) };
      case "markDead":
        return { type: c.type, ...this.markDead(c, index) };
      case "tick":
        return this.tick(c, index);
      case "createTopics":
        return {
          type: c.type,
          results: this.createTopics(c.topics, c.validateOnly, index, c.configRules ?? 1),
        };
      case "deleteTopics":
        return { type: c.type, results: this.deleteTopics(c.names, index) };
      case "alterConfigs":
        return {
          type: c.type,
          results: this.alterConfigs(c.topics, c.validateOnly, index, c.configRules),
        };
      case "createPartitions":
        return { type: c.type, results: this.createPartitions(c.topics, c.validateOnly, index) };
      case "allocateProducerIds":
        return this.allocateProducerIds(c.nodeId);
      case "reportLeaders":
        return { type: c.type, ...this.reportLeaders(c.changes, index) };
      case "setController":
        return { type: c.type, ...this.setController(c.nodeId, c.address, index) };
      case "removeController": {
        this.controllerDirectories.delete(c.nodeId);
        return { type: c.type, ...this.setController(c.nodeId, null, index) };
      }
      case "setControllerDirectory":
        return { type: c.type, ...this.setControllerDirectory(c.nodeId, c.directoryId) };
      case "alterScram": {
        const { results, changed } = alterScram(this.scram, c);
        if (changed) this.versionIndex = index;
        return { type: c.type, outcomes: results };
      }
      case "createAcls": {
        const { results, changed } = createAcls(this.acls, c);
        if (changed) this.versionIndex = index;
        return { type: c.type, outcomes: results };
      }
      case "deleteAcls": {
        const { results, changed } = deleteAcls(this.acls, c);
        if (changed) this.versionIndex = index;
        return { type: c.type, outcomes: results };
      }
      case "alterClientQuotas": {
        const { results, changed } = alterClientQuotas(this.quotas, c);
        if (changed) this.versionIndex = index;
        return { type: c.type, outcomes: results };
      }
    }
  }

  // --- nodes -------------------------------------------------------------------------------

  private advanceClock(nowMs: unknown): number {
    if (typeof nowMs === "number" && Number.isFinite(nowMs) && nowMs > this.clockMs)
      this.clockMs = nowMs;
    return this.clockMs;
  }

  private register(
    c: Extract<Command, { type: "register" }>,
    index: number,
  ): { error?: CommandError } {
    const now = this.advanceClock(c.nowMs);
    const bad = checkNodeIdentity(c.nodeId, c.role) ?? checkRegistration(c);
    if (bad) return { error: bad };
    const key = nodeKey(c.role, c.nodeId);
    const existing = this.nodes.get(key);
    if (
      existing &&
      existing.incarnation !== c.incarnation &&
      existing.alive &&
      existing.leaseDeadlineMs >= now
    ) {
      return {
        error: fail(
          "DUPLICATE_BROKER_REGISTRATION",
          `${c.role} ${c.nodeId} is held by live incarnation ${existing.incarnation} (lease until ${existing.leaseDeadlineMs}); retry after it expires`,
        ),
      };
    }
    if (!existing && this.nodes.size >= NODES_MAX)
      return { error: fail("INVALID_REQUEST", `the cluster already has ${NODES_MAX} nodes`) };
    const rack = c.rack === undefined || c.rack === "" ? undefined : c.rack;
    const kafkaAddress =
      c.kafkaAddress === undefined || c.kafkaAddress === "" ? undefined : c.kafkaAddress;
    const changed =
      !existing ||
      !existing.alive ||
      existing.address !== c.address ||
      existing.rack !== rack ||
      existing.kafkaAddress !== kafkaAddress ||
      existing.incarnation !== c.incarnation;
    this.nodes.set(key, {
      nodeId: c.nodeId,
      role: c.role,
      address: c.address,
      rack,
      kafkaAddress,
      incarnation: c.incarnation,
      alive: true,
      leaseDeadlineMs: now + c.leaseMs,
      deadSinceMs: -1,
    });
    if (changed) this.versionIndex = index;
    return {};
  }

  private heartbeat(
    c: Extract<Command, { type: "heartbeat" }>,
    index: number,
  ): { error?: CommandError } {
    const now = this.advanceClock(c.nowMs);
    const bad = checkNodeIdentity(c.nodeId, c.role);
    if (bad) return { error: bad };
    if (!isLease(c.leaseMs))
      return { error: fail("INVALID_REQUEST", `lease ${String(c.leaseMs)} ms is invalid`) };
    const node = this.nodes.get(nodeKey(c.role, c.nodeId));
    if (!node || node.incarnation !== c.incarnation) {
      return {
        error: fail(
          "UNKNOWN_NODE",
          `${c.role} ${c.nodeId} is not registered with incarnation ${c.incarnation}; register again`,
        ),
      };
    }
    // A late heartbeat of the same incarnation revives the node (a pause, not a restart).
    if (!node.alive) {
      node.alive = true;
      node.deadSinceMs = -1;
      this.versionIndex = index;
    }
    node.leaseDeadlineMs = Math.max(node.leaseDeadlineMs, now + c.leaseMs);
    return {};
  }

  /**
   * False when a heartbeat would only push a live node's lease further while at least half of
   * it is left: the leader then answers it without a Raft write. Every other heartbeat (a node
   * to revive, an unknown incarnation, a malformed command, a lease past its half) is proposed.
   * Without this every node's heartbeat was a Raft entry, about 40 % of an idle cluster's CPU.
   */
  heartbeatNeedsWrite(c: Omit<Extract<Command, { type: "heartbeat" }>, "type">): boolean {
    if (checkNodeIdentity(c.nodeId, c.role) !== undefined || !isLease(c.leaseMs)) return true;
    const node = this.nodes.get(nodeKey(c.role, c.nodeId));
    if (!node || !node.alive || node.incarnation !== c.incarnation) return true;
    const now = Math.max(this.clockMs, c.nowMs);
    return node.leaseDeadlineMs - now < c.leaseMs * LEASE_RENEW_AT_FRACTION;
  }

  private markDead(
    c: Extract<Command, { type: "markDead" }>,
    index: number,
  ): { error?: CommandError } {
    const now = this.advanceClock(c.nowMs);
    const node = this.nodes.get(nodeKey(c.role, c.nodeId));
    if (!node) return { error: fail("UNKNOWN_NODE", `${c.role} ${c.nodeId} is not registered`) };
    if (node.alive) {
      node.alive = false;
      node.deadSinceMs = now;
      node.leaseDeadlineMs = Math.min(node.leaseDeadlineMs, now);
      this.versionIndex = index;
    }
    return {};
  }

  // --- time-driven work ----------------------------------------------------------------------

  /** True when a tick with these settings would change something (the leader proposes only then). */
  tickWouldChange(c: Omit<Extract<Command, { type: "tick" }>, "type">): boolean {
    const plan = this.planTick({ type: "tick", ...c }, Math.max(this.clockMs, c.nowMs));
    return plan.expire.length + plan.create.length + plan.moves.length + plan.ids.length > 0;
  }

  /**
   * The topics a tick proposed now should carry ids for: those without one, and the internal
   * topics in `internalTopics` not created yet (the leader draws the ids, apply only copies them).
   */
  topicsWithoutIds(internalTopics: readonly InternalTopicSpec[]): string[] {
    const missing = this.sortedTopics()
      .filter((t) => t.id === undefined)
      .map((t) => t.name);
    const toCreate = internalTopics.map((s) => s.name).filter((n) => !this.topics.has(n));
    return [...missing, ...toCreate];
  }

  private tick(c: Extract<Command, { type: "tick" }>, index: number): CommandResult {
    const now = this.advanceClock(c.nowMs);
    const plan = this.planTick(c, now);
    for (const node of plan.expire) {
      node.alive = false;
      node.deadSinceMs = now;
    }
    const ids = tickTopicIds(c.topicIds);
    for (const { topic, id } of plan.ids) topic.id = id;
    for (const { spec, replicas } of plan.create) {
      const id = ids.get(spec.name);
      this.topics.set(spec.name, {
        name: spec.name,
        ...(id !== undefined && !this.topicIdInUse(id) ? { id } : {}),
        internal: true,
        role: spec.role,
        config: {},
        partitions: replicas.map((r, partition) => ({
          partition,
          replicas: r,
          leader: -1,
          leaderTerm: 0,
        })),
      });
    }
    for (const { partition, replicas } of plan.moves) {
      partition.replicas = replicas;
      if (!replicas.includes(partition.leader)) partition.leader = -1;
    }
    if (plan.expire.length + plan.create.length + plan.moves.length + plan.ids.length > 0)
      this.versionIndex = index;
    return {
      type: "tick",
      expired: plan.expire.length,
      created: plan.create.length,
      moved: plan.moves.length,
    };
  }

  /** Computes a tick's changes without making them (pure over the current state). */
  private planTick(c: Extract<Command, { type: "tick" }>, now: number): TickPlan {
    const expire = c.expireLeases
      ? this.sortedNodes().filter((n) => n.alive && n.leaseDeadlineMs < now)
      : [];
    const expiring = new Set(expire);
    const liveOf = (role: Role): PlacementNode[] =>
      this.sortedNodes()
        .filter((n) => n.role === role && n.alive && !expiring.has(n))
        .map(toPlacementNode);
    const loads = new Map<Role, Map<number, NodeLoad>>([
      ["broker", this.loadFor("broker")],
      ["coordinator", this.loadFor("coordinator")],
    ]);
    const create: TickPlan["create"] = [];
    for (const spec of Array.isArray(c.internalTopics) ? c.internalTopics : []) {
      if (this.topics.has(spec.name) || checkInternalSpec(spec) !== undefined) continue;
      const live = liveOf(spec.role);
      if (live.length < spec.replicationFactor) continue;
      create.push({
        spec,
        replicas: placePartitions(
          live,
          loads.get(spec.role)!,
          spec.partitions,
          spec.replicationFactor,
        ),
      });
    }
    const moves: TickPlan["moves"] = [];
    const replaceAfterMs =
      Number.isFinite(c.replaceAfterMs) && c.replaceAfterMs >= 0 ? c.replaceAfterMs : Infinity;
    for (const role of ["broker", "coordinator"] as const) {
      const gone = new Set(
        this.sortedNodes()
          .filter(
            (n) =>
              n.role === role &&
              (expiring.has(n) ? now : n.alive ? Infinity : n.deadSinceMs) + replaceAfterMs <= now,
          )
          .map((n) => n.nodeId),
      );
      if (gone.size === 0) continue;
      const live = liveOf(role);
      const liveIds = new Set(live.map((n) => n.nodeId));
      for (const topic of this.sortedTopics()) {
        if (topic.role !== role) continue;
        for (const partition of topic.partitions) {
          const deadHere = partition.replicas.filter((id) => gone.has(id));
          if (deadHere.length === 0) continue;
          // Only with a live majority: the hosts' membership change must commit, and fresh empty
          // replicas must never be able to form a majority (they would elect an empty log).
          // One replica per tick: hosts change membership one voter at a time.
          const aliveHere = partition.replicas.filter((id) => liveIds.has(id)).length;
          if (aliveHere * 2 <= partition.replicas.length) continue;
          const replicas = replaceReplicas(
            partition.replicas,
            new Set([deadHere[0]!]),
            live,
            loads.get(role)!,
          );
          if (!sameList(replicas, partition.replicas)) moves.push({ topic, partition, replicas });
        }
      }
    }
    const ids: TickPlan["ids"] = [];
    const assigned = new Set<string>();
    for (const [name, id] of tickTopicIds(c.topicIds)) {
      const topic = this.topics.get(name);
      if (topic === undefined || topic.id !== undefined) continue;
      if (this.topicIdInUse(id) || assigned.has(id)) continue;
      assigned.add(id);
      ids.push({ topic, id });
    }
    return { expire, create, moves, ids };
  }

  private topicIdInUse(id: string): boolean {
    for (const t of this.topics.values()) if (t.id === id) return true;
    return false;
  }

  // --- topics --------------------------------------------------------------------------------

  private createTopics(
    requests: readonly TopicRequest[],
    validateOnly: boolean,
    index: number,
    configRules: number,
  ): TopicResult[] {
    const refused = topicCountRefusal(requests, "create", { emptyAllowed: true });
    if (refused) return refused;
    const counts = new Map<string, number>();
    for (const r of requests) counts.set(r?.name, (counts.get(r?.name) ?? 0) + 1);
    const load = this.loadFor("broker");
    const results: TopicResult[] = [];
    let created = 0;
    for (const r of requests) {
      const name = typeof r?.name === "string" ? r.name : "";
      const bad =
        (counts.get(r?.name) ?? 0) > 1
          ? fail("INVALID_REQUEST", `topic "${name}" appears more than once in the request`)
          : this.checkCreate(r, created, configRules);
      if (bad) {
        results.push({ name, error: bad });
        continue;
      }
      const replicas = placePartitions(
        this.liveNodes("broker"),
        load,
        r.partitions,
        r.replicationFactor,
      );
      const record: TopicRecord = {
        name,
        ...(r.id !== undefined ? { id: r.id } : {}),
        internal: false,
        role: "broker",
        config: { ...r.config },
        partitions: replicas.map((rs, partition) => ({
          partition,
          replicas: rs,
          leader: -1,
          leaderTerm: 0,
        })),
      };
      if (!validateOnly) {
        this.topics.set(name, record);
        created += 1;
      }
      results.push({ name, error: NO_ERROR, topic: topicInfo(record) });
    }
    if (created > 0) this.versionIndex = index;
    return results;
  }

  private checkCreate(
    r: TopicRequest,
    createdInThisRequest: number,
    configRules: number,
  ): CommandError | undefined {
    if (typeof r !== "object" || r === null)
      return fail("INVALID_REQUEST", "a topic entry is not an object");
    const violation =
      checkTopicName(r?.name) ??
      checkPartitionCount(r.partitions) ??
      checkReplicationFactor(r.replicationFactor, this.liveNodes("broker").length, "broker") ??
      checkTopicConfig(r.config ?? {}, r.replicationFactor, configRules);
    if (violation) return fail(violation.error, violation.message);
    if (this.topics.has(r.name))
      return fail("TOPIC_ALREADY_EXISTS", `topic "${r.name}" already exists`);
    if (r.id !== undefined && (!isTopicId(r.id) || this.topicIdInUse(r.id)))
      return fail("INVALID_REQUEST", `topic id ${String(r.id)} is invalid or already in use`);
    if (this.topics.size + createdInThisRequest >= TOPICS_MAX)
      return fail("INVALID_REQUEST", `the cluster already has ${TOPICS_MAX} topics`);
    return undefined;
  }

  private deleteTopics(names: readonly string[], index: number): TopicResult[] {
    const refused = topicCountRefusal(names, "delete", { emptyAllowed: true });
    if (refused) return refused;
    const results: TopicResult[] = [];
    for (const name of names) {
      const topic = typeof name === "string" ? this.topics.get(name) : undefined;
      if (!topic) {
        results.push({
          name: String(name),
          error: fail("UNKNOWN_TOPIC_OR_PARTITION", `topic "${String(name)}" does not exist`),
        });
      } else if (topic.internal) {
        results.push({
          name,
          error: fail(
            "INVALID_TOPIC_EXCEPTION",
            `topic "${name}" is internal and cannot be deleted`,
          ),
        });
      } else {
        this.topics.delete(name);
        this.versionIndex = index;
        results.push({ name, error: NO_ERROR });
      }
    }
    return results;
  }

  /** The user topic a change names, or why not (duplicates in one request, unknown, internal). */
  private alterable(name: unknown, counts: Map<unknown, number>): TopicRecord | CommandError {
    if ((counts.get(name) ?? 0) > 1)
      return fail(
        "INVALID_REQUEST",
        `topic "${String(name)}" appears more than once in the request`,
      );
    const topic = typeof name === "string" ? this.topics.get(name) : undefined;
    if (!topic) return fail("UNKNOWN_TOPIC_OR_PARTITION", `topic "${String(name)}" does not exist`);
    if (topic.internal)
      return fail(
        "INVALID_TOPIC_EXCEPTION",
        `topic "${String(name)}" is internal and cannot be altered`,
      );
    return topic;
  }

  private alterConfigs(
    changes: readonly ConfigAlteration[],
    validateOnly: boolean,
    index: number,
    configRules: number,
  ): TopicResult[] {
    const refused = topicCountRefusal(changes, "alter", { emptyAllowed: false });
    if (refused) return refused;
    const counts = new Map<unknown, number>();
    for (const c of changes) counts.set(c?.name, (counts.get(c?.name) ?? 0) + 1);
    const results: TopicResult[] = [];
    for (const c of changes) {
      const topic = this.alterable(c?.name, counts);
      if (!("partitions" in topic)) {
        results.push({ name: String(c?.name ?? ""), error: topic });
        continue;
      }
      const out = alteredConfig(
        topic.config,
        c,
        topic.partitions[0]?.replicas.length ?? 1,
        configRules,
      );
      if ("violation" in out) {
        results.push({ name: topic.name, error: fail(out.violation.error, out.violation.message) });
        continue;
      }
      if (!validateOnly) {
        topic.config = out.config;
        this.versionIndex = index;
      }
      results.push({
        name: topic.name,
        error: NO_ERROR,
        topic: topicInfo({ ...topic, config: out.config }),
      });
    }
    return results;
  }

  private createPartitions(
    changes: readonly PartitionIncrease[],
    validateOnly: boolean,
    index: number,
  ): TopicResult[] {
    const refused = topicCountRefusal(changes, "grow", { emptyAllowed: false });
    if (refused) return refused;
    const counts = new Map<unknown, number>();
    for (const c of changes) counts.set(c?.name, (counts.get(c?.name) ?? 0) + 1);
    const load = this.loadFor("broker");
    const results: TopicResult[] = [];
    for (const c of changes) {
      const topic = this.alterable(c?.name, counts);
      if (!("partitions" in topic)) {
        results.push({ name: String(c?.name ?? ""), error: topic });
        continue;
      }
      const rf = topic.partitions[0]?.replicas.length ?? 1;
      const bad =
        checkPartitionIncrease(topic.partitions.length, c.totalCount) ??
        checkReplicationFactor(rf, this.liveNodes("broker").length, "broker");
      if (bad) {
        results.push({ name: topic.name, error: fail(bad.error, bad.message) });
        continue;
      }
      // New partitions are placed like a new topic's, on the live brokers, around today's load.
      const placed = placePartitions(
        this.liveNodes("broker"),
        load,
        c.totalCount - topic.partitions.length,
        rf,
      );
      const added = placed.map((replicas, i) => ({
        partition: topic.partitions.length + i,
        replicas,
        leader: -1,
        leaderTerm: 0,
      }));
      const grown = { ...topic, partitions: [...topic.partitions, ...added] };
      if (!validateOnly) {
        topic.partitions = grown.partitions;
        this.versionIndex = index;
      }
      results.push({ name: topic.name, error: NO_ERROR, topic: topicInfo(grown) });
    }
    return results;
  }

  private reportLeaders(changes: readonly LeaderReport[], index: number): { error?: CommandError } {
    if (!Array.isArray(changes) || changes.length > LEADER_REPORTS_PER_REQUEST_MAX) {
      return {
        error: fail(
          "INVALID_REQUEST",
          `a report may carry up to ${LEADER_REPORTS_PER_REQUEST_MAX} changes`,
        ),
      };
    }
    for (const ch of changes) {
      if (
        !Number.isInteger(ch?.term) ||
        !Number.isInteger(ch.leader) ||
        ch.term < 0 ||
        ch.leader < -1
      )
        continue;
      const p = this.topics.get(ch.topic)?.partitions[ch.partition];
      if (!p) continue; // a report about a deleted topic: ignore
      // The highest term wins; within a term the first known leader stands (Raft: one per term).
      if (
        ch.term > p.leaderTerm ||
        (ch.term === p.leaderTerm && p.leader === -1 && ch.leader !== -1)
      ) {
        if (p.leader !== ch.leader || p.leaderTerm !== ch.term) this.versionIndex = index;
        p.leader = ch.leader;
        p.leaderTerm = ch.term;
      }
    }
    return {};
  }

  private setController(
    nodeId: number,
    address: string | null,
    index: number,
  ): { error?: CommandError } {
    if (!Number.isInteger(nodeId) || nodeId < 0 || nodeId > NODE_ID_MAX)
      return { error: fail("INVALID_REQUEST", `controller id ${String(nodeId)} is invalid`) };
    if (
      address !== null &&
      (typeof address !== "string" || !/^(\[[^\]]+\]|[^:\s]+):\d{1,5}$/.test(address))
    ) {
      return {
        error: fail(
          "INVALID_REQUEST",
          `controller address "${String(address)}" is invalid: expected HOST:PORT`,
        ),
      };
    }
    if (this.controllerOverrides.get(nodeId) !== address) {
      this.controllerOverrides.set(nodeId, address);
      this.versionIndex = index;
    }
    return {};
  }

  private setControllerDirectory(nodeId: number, directoryId: string): { error?: CommandError } {
    if (!Number.isInteger(nodeId) || nodeId < 0 || nodeId > NODE_ID_MAX)
      return { error: fail("INVALID_REQUEST", `controller id ${String(nodeId)} is invalid`) };
    if (typeof directoryId !== "string" || !/^[0-9a-f-]{36}$/.test(directoryId))
      return {
        error: fail("INVALID_REQUEST", `directory id "${String(directoryId)}" is not a UUID`),
      };
    const recorded = this.controllerDirectories.get(nodeId);
    if (recorded !== undefined && recorded !== directoryId) {
      return {
        error: fail(
          "INVALID_REQUEST",
          `controller ${nodeId} is recorded with data directory ${recorded}, not ${directoryId}: its data directory is not the one it voted with (lost or replaced disk)`,
        ),
      };
    }
    this.controllerDirectories.set(nodeId, directoryId);
    return {};
  }

  /** The data-directory id a controller recorded; undefined before it has. */
  controllerDirectory(nodeId: number): string | undefined {
    return this.controllerDirectories.get(nodeId);
  }

  /** The configured quorum with the runtime additions and removals applied, sorted by id. */
  controllers(configured: readonly PeerAddress[]): PeerAddress[] {
    const byId = new Map(configured.map((c) => [c.id, c] as const));
    for (const [id, address] of this.controllerOverrides) {
      if (address === null) {
        byId.delete(id);
        continue;
      }
      const colon = address.lastIndexOf(":");
      byId.set(id, {
        id,
        host: address.slice(0, colon).replace(/^\[|\]$/g, ""),
        port: Number(address.slice(colon + 1)),
      });
    }
    return [...byId.values()].sort((a, b) => a.id - b.id);
  }

  private allocateProducerIds(nodeId: number): CommandResult {
    if (!Number.isInteger(nodeId) || nodeId < 0) {
      return {
        type: "allocateProducerIds",
        error: fail("INVALID_REQUEST", `node id ${String(nodeId)} is invalid`),
      };
    }
    const block = this.producerIds.allocate();
    if (!block)
      return {
        type: "allocateProducerIds",
        error: fail("UNKNOWN_SERVER_ERROR", "the producer id space is exhausted"),
      };
    return {
      type: "allocateProducerIds",
      firstProducerId: block.firstProducerId,
      count: block.count,
    };
  }

  // --- views ---------------------------------------------------------------------------------

  private sortedNodes(): NodeRecord[] {
    return [...this.nodes.values()].sort((a, b) =>
      a.role === b.role ? a.nodeId - b.nodeId : a.role < b.role ? -1 : 1,
    );
  }

  private sortedTopics(): TopicRecord[] {
    return [...this.topics.values()].sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
    );
  }

  private liveNodes(role: Role): PlacementNode[] {
    return this.sortedNodes()
      .filter((n) => n.role === role && n.alive)
      .map(toPlacementNode);
  }

  private loadFor(role: Role): Map<number, NodeLoad> {
    return loadOf(
      this.sortedTopics()
        .filter((t) => t.role === role)
        .flatMap((t) => t.partitions.map((p) => p.replicas)),
    );
  }

  version(): bigint {
    return BigInt(this.versionIndex);
  }

  appliedIndex(): number {
    return this.applied;
  }

  nowMs(): number {
    return this.clockMs;
  }

  nextProducerId(): bigint {
    return this.producerIds.next();
  }

  node(role: Role, nodeId: number): Readonly<NodeRecord> | undefined {
    return this.nodes.get(nodeKey(role, nodeId));
  }

  /** The visible view; controllerLeader is filled in by the caller. */
  metadata(controllerLeader = -1): ClusterMetadata {
    return {
      version: String(this.versionIndex),
      controllerLeader,
      nodes: this.sortedNodes().map(nodeInfo),
      topics: this.sortedTopics().map(topicInfo),
    };
  }

  /** The SCRAM store (read-only use: the Kafka listeners' credentials and DescribeUserScramCredentials). */
  scramCredentials(): ScramCredentialStore {
    return this.scram;
  }

  /** The ACL store (read-only use: DescribeAcls and the metadata views' bindings). */
  aclStore(): AclStore {
    return this.acls;
  }

  /** The client-quota store (read-only use: DescribeClientQuotas and the metadata views). */
  clientQuotaStore(): ClientQuotaStore {
    return this.quotas;
  }

  /** Listens for version changes (after apply or restore); returns the unsubscribe function. */
  onChange(listener: (version: bigint) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private notify(): void {
    const v = this.version();
    for (const l of this.listeners) l(v);
  }

  // --- snapshots -----------------------------------------------------------------------------

  snapshot(): Uint8Array {
    const body = {
      format: SNAPSHOT_FORMAT,
      nodes: this.sortedNodes(),
      topics: this.sortedTopics(),
      nextProducerId: String(this.producerIds.next()),
      controllerOverrides: [...this.controllerOverrides.entries()].sort((a, b) => a[0] - b[0]),
      controllerDirectories: [...this.controllerDirectories.entries()].sort((a, b) => a[0] - b[0]),
      scramCredentials: scramStoreSnapshot(this.scram),
      acls: aclEntries(this.acls),
      clientQuotas: clientQuotaEntries(this.quotas),
      clockMs: this.clockMs,
      versionIndex: this.versionIndex,
      applied: this.applied,
    };
    return new TextEncoder().encode(JSON.stringify(body, (_k, v) => (v === undefined ? null : v)));
  }

  restore(data: Uint8Array, index: number): void {
    const body = JSON.parse(new TextDecoder().decode(data)) as {
      format: number;
      nodes: Array<NodeRecord & { rack: string | null; kafkaAddress?: string | null }>;
      topics: TopicRecord[];
      nextProducerId: string;
      clockMs: number;
      versionIndex: number;
      controllerOverrides?: Array<[number, string | null]>;
      controllerDirectories?: Array<[number, string]>;
      scramCredentials?: unknown;
      acls?: unknown;
      clientQuotas?: unknown;
    };
    if (body.format !== SNAPSHOT_FORMAT)
      throw new Error(`controller snapshot format ${body.format} is not supported`);
    this.nodes = new Map(
      body.nodes.map((n) => [
        nodeKey(n.role, n.nodeId),
        { ...n, rack: n.rack ?? undefined, kafkaAddress: n.kafkaAddress ?? undefined },
      ]),
    );
    // Snapshots from before topic ids hold none (or null): a later tick assigns them.
    this.topics = new Map(
      body.topics.map((t) => {
        const { id, ...rest } = t;
        return [t.name, isTopicId(id) ? { ...rest, id } : rest];
      }),
    );
    this.producerIds = new ProducerIdBlocks(BigInt(body.nextProducerId));
    this.controllerOverrides = new Map(body.controllerOverrides ?? []);
    this.controllerDirectories = new Map(body.controllerDirectories ?? []);
    this.scram = scramStoreFromSnapshot(body.scramCredentials);
    this.acls = aclStoreFromSnapshot(body.acls);
    this.quotas = clientQuotaStoreFromSnapshot(body.clientQuotas);
    this.clockMs = body.clockMs;
    this.versionIndex = body.versionIndex;
    this.applied = index;
    this.notify();
  }
}

function toPlacementNode(n: NodeRecord): PlacementNode {
  return n.rack === undefined ? { nodeId: n.nodeId } : { nodeId: n.nodeId, rack: n.rack };
}

function nodeInfo(n: NodeRecord): NodeInfo {
  const info: NodeInfo = {
    nodeId: n.nodeId,
    role: n.role,
    address: n.address,
    alive: n.alive,
    incarnation: n.incarnation,
  };
  if (n.rack !== undefined) info.rack = n.rack;
  if (n.kafkaAddress !== undefined) info.kafkaAddress = n.kafkaAddress;
  return info;
}

export function topicInfo(t: TopicRecord): TopicInfo {
  return {
    name: t.name,
    ...(t.id !== undefined ? { id: t.id } : {}),
    internal: t.internal,
    role: t.role,
    config: { ...t.config },
    partitions: t.partitions.map((p) => ({
      topic: t.name,
      partition: p.partition,
      replicas: [...p.replicas],
      leader: p.leader,
      leaderTerm: p.leaderTerm,
    })),
  };
}

/** A tick's id assignments by topic name, the well-formed ones only (first one per name). */
function tickTopicIds(list: readonly TopicIdAssignment[] | undefined): Map<string, string> {
  const ids = new Map<string, string>();
  for (const a of Array.isArray(list) ? list : []) {
    if (typeof a?.name === "string" && isTopicId(a.id) && !ids.has(a.name)) ids.set(a.name, a.id);
  }
  return ids;
}

function sameList(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function isLease(ms: unknown): ms is number {
  return typeof ms === "number" && Number.isInteger(ms) && ms > 0 && ms <= LEASE_MS_MAX;
}

function checkNodeIdentity(nodeId: unknown, role: unknown): CommandError | undefined {
  if (
    typeof nodeId !== "number" ||
    !Number.isInteger(nodeId) ||
    nodeId < 0 ||
    nodeId > NODE_ID_MAX
  ) {
    return fail(
      "INVALID_REQUEST",
      `node id ${String(nodeId)} is invalid: it must be 0..${NODE_ID_MAX}`,
    );
  }
  if (role !== "broker" && role !== "coordinator")
    return fail("INVALID_REQUEST", `role ${String(role)} is invalid: broker or coordinator`);
  return undefined;
}

function checkRegistration(c: Extract<Command, { type: "register" }>): CommandError | undefined {
  if (
    typeof c.address !== "string" ||
    !/^(\[[^\]]+\]|[^:\s]+):\d{1,5}$/.test(c.address) ||
    c.address.length > ADDRESS_LENGTH_MAX
  ) {
    return fail("INVALID_REQUEST", `address "${String(c.address)}" is invalid: expected HOST:PORT`);
  }
  if (
    typeof c.incarnation !== "string" ||
    c.incarnation.length === 0 ||
    c.incarnation.length > INCARNATION_LENGTH_MAX
  ) {
    return fail("INVALID_REQUEST", `incarnation must be 1..${INCARNATION_LENGTH_MAX} characters`);
  }
  if (
    c.kafkaAddress !== undefined &&
    (typeof c.kafkaAddress !== "string" ||
      !/^(\[[^\]]+\]|[^:\s]+):\d{1,5}$/.test(c.kafkaAddress) ||
      c.kafkaAddress.length > ADDRESS_LENGTH_MAX)
  ) {
    return fail(
      "INVALID_REQUEST",
      `kafka address "${String(c.kafkaAddress)}" is invalid: expected HOST:PORT`,
    );
  }
  if (c.rack !== undefined && (typeof c.rack !== "string" || c.rack.length > RACK_LENGTH_MAX)) {
    return fail("INVALID_REQUEST", `rack must be at most ${RACK_LENGTH_MAX} characters`);
  }
  if (!isLease(c.leaseMs))
    return fail("INVALID_REQUEST", `lease ${String(c.leaseMs)} ms is invalid`);
  return undefined;
}

function checkInternalSpec(spec: InternalTopicSpec): CommandError | undefined {
  const v = checkTopicName(spec?.name, true) ?? checkPartitionCount(spec.partitions);
  if (v) return fail(v.error, v.message);
  if (!Number.isInteger(spec.replicationFactor) || spec.replicationFactor < 1)
    return fail("INVALID_REPLICATION_FACTOR", "invalid");
  if (spec.role !== "broker" && spec.role !== "coordinator")
    return fail("INVALID_REQUEST", "invalid role");
  return undefined;
}

// Cluster administration (Kafka's Admin client and kafka-transactions.sh): topics, cluster
// status, transactions across every coordinator, producers per partition, hanging
// transactions across every broker (checked against the coordinators), and aborting a
// transaction.
import type { AclBinding, AclFilter } from "../../common/acl.js";
import type {
  ClientQuotaEntry,
  QuotaAlteration,
  QuotaFilterComponent,
} from "../../common/client-quota.js";
import { liveNodeIds, offlineReason, type OfflineReason } from "../../metadata/partition-health.js";
import type { ClientLogger as Logger } from "../../common/client-logger.js";
import { silentClientLogger as silentLogger } from "../../common/client-logger.js";
import { TernError, type ErrorName } from "../../common/errors.js";
import { checkHealth } from "../../grpc/health-check.js";
import type { ChannelCredentialsSource } from "../../grpc/client-credentials.js";
import type {
  ControllerQuorumStatus,
  TopicOutcome,
  TopicSpec,
} from "../../metadata/controller-client.js";
import type { ClusterMetadata, NodeInfo, TopicInfo } from "../../metadata/types.js";
import { toClientError } from "../errors.js";
import { LOCAL_BOOTSTRAP } from "../network/bootstrap.js";
import {
  clientCredentialsOf,
  GrpcTransport,
  type ClientSecurityOptions,
} from "../network/grpc-transport.js";
import type { Transport } from "../network/transport.js";
import type {
  ProducerState__Output,
  TransactionDescription__Output as WireTransactionDescription,
} from "../../common/proto-types/index.js";
import { CoordinatorFinder } from "../network/coordinator-finder.js";
import { firstPartitionError, leaderCall } from "../network/leader-call.js";
import { MetadataCache } from "../network/metadata-cache.js";
import { parseBootstrap } from "../network/bootstrap.js";
import type { TopicPartition } from "../consumer/consumer.js";
import * as groups from "./consumer-groups-admin.js";
import type {
  TransactionDescription,
  TransactionListing,
  TransactionStateName,
} from "./transaction-types.js";
import {
  checkScramIterations,
  checkScramUser,
  randomSalt,
  saltedPassword as scramSaltedPassword,
  SCRAM_ITERATIONS_MIN,
  type ScramMechanism,
} from "../../common/scram.js";
import {
  judgeOpenTransaction,
  type CoordinatorVerdict,
  type OpenTransactionRef,
} from "./hanging-check.js";

/** `tls` and `credentials` (ClientSecurityOptions): how this client's channels are secured. */
export interface AdminOptions extends ClientSecurityOptions {
  readonly bootstrap?: string | readonly string[];
  readonly requestTimeoutMs?: number;
  readonly logger?: Logger;
  /**
   * How calls reach the nodes (default: gRPC, see network/grpc-transport.ts). Tests pass a
   * scripted one; a transport given here is the caller's to close.
   */
  readonly transport?: Transport;
}

export type {
  TransactionDescription,
  TransactionListing,
  TransactionStateName,
} from "./transaction-types.js";

export interface ProducerStateInfo {
  producerId: bigint;
  producerEpoch: number;
  lastSequence: number;
  lastTimestampMs: number;
  coordinatorEpoch: number;
  currentTxnStartOffset: bigint;
  currentTxnStartTimeMs: number;
}

/** How far a partition's leader replica has cleaned its log (docs/storage.md, "Compaction"). */
export interface LogCleaningInfo {
  /** Whether the topic's cleanup.policy includes compact. */
  compacted: boolean;
  /** Dirty bytes over the cleanable prefix's bytes (what min.cleanable.dirty.ratio is compared with). */
  dirtyRatio: number;
  cleanableBytes: number;
  dirtyBytes: number;
  /** The last offset a clean covered (-1n: none yet). */
  lastCleanedOffset: bigint;
}

export interface HangingTransaction {
  topic: string;
  partition: number;
  producerId: bigint;
  producerEpoch: number;
  coordinatorEpoch: number;
  startOffset: bigint;
  startTimeMs: number;
  openMs: number;
  broker: string;
  /** The transactional id that owns the producer id, when a coordinator knows one. */
  transactionalId?: string;
  /** That id's state on its coordinator. */
  coordinatorState?: TransactionStateName;
  /** Why the coordinator check calls it hanging. */
  reason: string;
}

/** What `abortHangingTransaction` wrote: an ABORT marker for this producer on this partition. */
export interface PartitionAbortSpec {
  topic: string;
  partition: number;
  producerId: bigint;
  producerEpoch: number;
  coordinatorEpoch: number;
}

/** The transaction to abort on one partition: by its start offset, or by producer id and epochs. */
export type PartitionAbortTarget =
  | { topic: string; partition: number; startOffset: bigint }
  | {
      topic: string;
      partition: number;
      producerId: bigint;
      producerEpoch: number;
      coordinatorEpoch: number;
    };

export interface NodeStatus extends NodeInfo {
  health: string;
}

export interface ControllerStatus {
  nodeId: number;
  address: string;
  health: string;
  quorum?: ControllerQuorumStatus;
  error?: string;
}

export interface GroupLeader {
  topic: string;
  /** Which nodes replicate the group: brokers, or coordinators for __transaction_state. */
  role: "broker" | "coordinator";
  partition: number;
  leader: number;
  leaderTerm: number;
  replicas: number[];
  /** Why the group cannot serve, judged from metadata (libs/metadata/partition-health.ts); absent when it can. */
  offline?: OfflineReason;
}

export interface ClusterDescription {
  metadataVersion: string;
  controllerLeader: number;
  controllers: ControllerStatus[];
  nodes: NodeStatus[];
  /** Every Raft group with its leader: topic partitions, __consumer_offsets, __transaction_state. */
  groups: GroupLeader[];
}

const HEALTH_TIMEOUT_MS = 1_500;
const DESCRIBE_IDS_MAX = 1_000;
/** Per-partition admin calls (describeProducers, describeLogCleaning) in flight at once. */
const LEADER_CALLS_IN_FLIGHT_MAX = 64;
/** Partitions one deleteRecords call may name (one leader call each, run together). */
const DELETE_RECORDS_PARTITIONS_MAX = 1_000;

function wireTp(tp: { topic?: string; partition?: number } | null | undefined): TopicPartition {
  return { topic: String(tp?.topic ?? ""), partition: Number(tp?.partition ?? 0) };
}

export class Admin {
  private readonly transport: Transport;
  private readonly ownsTransport: boolean;
  private readonly metadata: MetadataCache;
  private readonly finder: CoordinatorFinder;
  private readonly logger: Logger;
  private readonly requestTimeoutMs: number;
  /** The health checks' channels (not the transport's: a custom transport has none). */
  private readonly channels: ChannelCredentialsSource;

  constructor(private readonly options: AdminOptions = {}) {
    this.logger = options.logger ?? silentLogger();
    const channels = clientCredentialsOf(options);
    this.channels = channels;
    this.transport = options.transport ?? new GrpcTransport(channels, options.credentials);
    this.ownsTransport = options.transport === undefined;
    this.metadata = new MetadataCache({
      bootstrap: options.bootstrap ?? LOCAL_BOOTSTRAP,
      logger: this.logger,
      credentials: options.credentials,
      transport: this.transport,
    });
    this.finder = new CoordinatorFinder(this.transport, this.metadata);
    this.requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
  }

  // --- topics -------------------------------------------------------------------------------

  /** Each topic succeeds or fails on its own; the outcomes say which. */
  async createTopics(
    topics: readonly TopicSpec[],
    options: { validateOnly?: boolean } = {},
  ): Promise<TopicOutcome[]> {
    return this.wrap("createTopics", () => this.metadata.controller.createTopics(topics, options));
  }

  /** Incremental config changes (Kafka's incrementalAlterConfigs): each topic all or nothing. */
  async alterTopicConfigs(
    changes: ReadonlyArray<{
      name: string;
      set?: Record<string, string>;
      delete?: readonly string[];
    }>,
    options: { validateOnly?: boolean } = {},
  ): Promise<TopicOutcome[]> {
    return this.wrap("alterTopicConfigs", () =>
      this.metadata.controller.alterTopicConfigs(changes, options),
    );
  }

  /** Raises partition counts to the given totals (Kafka's createPartitions). */
  async createPartitions(
    changes: ReadonlyArray<{ name: string; totalCount: number }>,
    options: { validateOnly?: boolean } = {},
  ): Promise<TopicOutcome[]> {
    return this.wrap("createPartitions", () =>
      this.metadata.controller.createPartitions(changes, options),
    );
  }

  async deleteTopics(names: readonly string[]): Promise<TopicOutcome[]> {
    return this.wrap("deleteTopics", () => this.metadata.controller.deleteTopics(names));
  }

  async listTopics(options: { includeInternal?: boolean } = {}): Promise<string[]> {
    return this.wrap("listTopics", () => this.metadata.controller.listTopics(options));
  }

  async describeTopics(names: readonly string[] = []): Promise<TopicOutcome[]> {
    return this.wrap("describeTopics", () => this.metadata.controller.describeTopics(names));
  }

  // --- users (SASL/SCRAM on the Kafka listeners) ---------------------------------------------

  /**
   * Creates or replaces a user's SCRAM credential. As Kafka's AdminClient does, the salt and
   * the salted password (PBKDF2) are computed here: the password never leaves this process.
   */
  async upsertUserScramCredential(
    user: string,
    password: string,
    options: { iterations?: number; mechanism?: ScramMechanism } = {},
  ): Promise<void> {
    const mechanism = options.mechanism ?? "SCRAM-SHA-512";
    const iterations = options.iterations ?? SCRAM_ITERATIONS_MIN;
    const bad =
      checkScramUser(user) ??
      checkScramIterations(iterations) ??
      (password.length === 0 ? "the password must not be empty" : undefined);
    if (bad) throw toClientError(new TernError("INVALID_REQUEST", bad));
    const salt = randomSalt();
    const saltedPassword = scramSaltedPassword(mechanism, password, salt, iterations);
    const [r] = await this.wrap("alterUserScramCredentials", () =>
      this.metadata.controller.alterUserScramCredentials({
        upsertions: [{ user, mechanism, iterations, salt, saltedPassword }],
      }),
    );
    if (r?.error) throw toClientError(r.error);
  }

  /** Deletes a user's credential (RESOURCE_NOT_FOUND when it has none). Open connections stay; new ones fail. */
  async deleteUserScramCredential(
    user: string,
    mechanism: ScramMechanism = "SCRAM-SHA-512",
  ): Promise<void> {
    const [r] = await this.wrap("alterUserScramCredentials", () =>
      this.metadata.controller.alterUserScramCredentials({ deletions: [{ user, mechanism }] }),
    );
    if (r?.error) throw toClientError(r.error);
  }

  /** Users with their mechanisms and iteration counts (never salts or keys). */
  async describeUserScramCredentials(users: readonly string[] = []): Promise<
    Array<{
      user: string;
      error?: string;
      credentials: Array<{ mechanism: string; iterations: number }>;
    }>
  > {
    const out = await this.wrap("describeUserScramCredentials", () =>
      this.metadata.controller.describeUserScramCredentials(users),
    );
    return out.map((u) =>
      u.error
        ? { user: u.user, error: u.error.errorName, credentials: u.credentials }
        : { user: u.user, credentials: u.credentials },
    );
  }

  /** Adds ACL bindings (docs/security.md, "Authorization"); the first refused one is thrown. */
  async createAcls(bindings: readonly AclBinding[]): Promise<void> {
    const results = await this.wrap("createAcls", () =>
      this.metadata.controller.createAcls(bindings),
    );
    const failed = results.find((r) => r !== undefined);
    if (failed) throw toClientError(failed);
  }

  /** The bindings matching the filter (every binding when it is empty). */
  async describeAcls(filter: AclFilter = {}): Promise<AclBinding[]> {
    return this.wrap("describeAcls", () => this.metadata.controller.describeAcls(filter));
  }

  /**
   * Sets or removes client quotas (docs/security.md, "Quotas"); each entity's change stands
   * alone and the first refused one is thrown (the others are applied).
   */
  async alterClientQuotas(
    alterations: readonly QuotaAlteration[],
    options: { validateOnly?: boolean } = {},
  ): Promise<void> {
    const results = await this.wrap("alterClientQuotas", () =>
      this.metadata.controller.alterClientQuotas(alterations, options.validateOnly === true),
    );
    const failed = results.find((r) => r !== undefined);
    if (failed) throw toClientError(failed);
  }

  /** The quota entities matching the filter (every one when it is empty). */
  async describeClientQuotas(
    components: readonly QuotaFilterComponent[] = [],
    options: { strict?: boolean } = {},
  ): Promise<ClientQuotaEntry[]> {
    return this.wrap("describeClientQuotas", () =>
      this.metadata.controller.describeClientQuotas(components, options.strict === true),
    );
  }

  /** Removes every binding matching a filter; answers the removed ones. */
  async deleteAcls(filters: readonly AclFilter[]): Promise<AclBinding[]> {
    const results = await this.wrap("deleteAcls", () =>
      this.metadata.controller.deleteAcls(filters),
    );
    const failed = results.find((r) => r.error);
    if (failed?.error) throw toClientError(failed.error);
    return results.flatMap((r) => r.deleted);
  }

  /** Polls metadata until every partition of the topics has a live leader (bounded). */
  async waitForLeaders(names: readonly string[], timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const m = await this.metadata.refresh().catch(() => undefined);
      if (
        m &&
        names.every((n) => {
          const t = m.topics.find((x) => x.name === n);
          return (
            t &&
            t.partitions.length > 0 &&
            t.partitions.every((p) => this.metadata.leaderAddress(n, p.partition))
          );
        })
      )
        return;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw toClientError(
      new TernError(
        "LEADER_NOT_AVAILABLE",
        `no leader for every partition of ${names.join(", ")} within ${timeoutMs} ms`,
      ),
    );
  }

  async metadataView(): Promise<ClusterMetadata> {
    return this.wrap("metadata", () => this.metadata.refresh());
  }

  // --- cluster ------------------------------------------------------------------------------

  private async checkHealth(address: string): Promise<string> {
    const credentials = this.channels.channel(this.options.credentials);
    return checkHealth(address, credentials, { timeoutMs: HEALTH_TIMEOUT_MS });
  }

  async describeCluster(): Promise<ClusterDescription> {
    const m = await this.metadataView();
    const controllers = m.controllers ?? parseBootstrap(this.options.bootstrap ?? LOCAL_BOOTSTRAP);
    const controllerRows = await Promise.all(
      controllers.map(async (c): Promise<ControllerStatus> => {
        const address = `${c.host}:${c.port}`;
        const health = await this.checkHealth(address).catch(() => "unreachable");
        try {
          return {
            nodeId: c.id,
            address,
            health: String(health),
            quorum: await this.metadata.controller.describeCluster(c.id),
          };
        } catch (e) {
          return {
            nodeId: c.id,
            address,
            health: String(health),
            error: String((e as Error).message ?? e),
          };
        }
      }),
    );
    const nodes = await Promise.all(
      m.nodes.map(async (n) => ({
        ...n,
        health: n.alive
          ? String(await this.checkHealth(n.address).catch(() => "unreachable"))
          : "dead",
      })),
    );
    const live = liveNodeIds(m.nodes);
    const groups: GroupLeader[] = m.topics.flatMap((t: TopicInfo) =>
      t.partitions.map((p) => {
        const offline = offlineReason(
          { role: t.role, replicas: p.replicas, leader: p.leader },
          live,
        );
        return {
          topic: t.name,
          role: t.role,
          partition: p.partition,
          leader: p.leader,
          leaderTerm: p.leaderTerm,
          replicas: p.replicas,
          ...(offline ? { offline } : {}),
        };
      }),
    );
    return {
      metadataVersion: m.version,
      controllerLeader: m.controllerLeader,
      controllers: controllerRows,
      nodes,
      groups,
    };
  }

  // --- consumer groups ------------------------------------------------------------------------

  private groupsContext(): groups.GroupsAdminContext {
    return {
      transport: this.transport,
      metadata: this.metadata,
      finder: this.finder,
      requestTimeoutMs: this.requestTimeoutMs,
    };
  }

  /** Every group of every broker (each lists the groups of the offsets partitions it leads). */
  listGroups(): Promise<{ groups: groups.GroupListing[]; unreachableBrokers: string[] }> {
    return this.wrap("listGroups", () => groups.listGroups(this.groupsContext()));
  }

  /** State, members, assignments and per-partition lag (committed vs log end offset). */
  describeGroup(groupId: string): Promise<groups.GroupDescription> {
    return this.wrap("describeGroup", () => groups.describeGroup(this.groupsContext(), groupId));
  }

  /** Deletes an empty group with its committed offsets. */
  deleteGroup(groupId: string): Promise<void> {
    return this.wrap("deleteGroup", () => groups.deleteGroup(this.groupsContext(), groupId));
  }

  deleteGroupOffsets(
    groupId: string,
    partitions: readonly TopicPartition[],
  ): Promise<Array<TopicPartition & { error: ErrorName }>> {
    return this.wrap("deleteGroupOffsets", () =>
      groups.deleteGroupOffsets(this.groupsContext(), groupId, partitions),
    );
  }

  /** Plans (and with execute applies) new offsets for an empty group. */
  resetGroupOffsets(
    groupId: string,
    partitions: readonly TopicPartition[],
    spec: groups.ResetSpec,
    execute: boolean,
  ): Promise<groups.ResetPlanRow[]> {
    return this.wrap("resetGroupOffsets", () =>
      groups.resetGroupOffsets(this.groupsContext(), groupId, partitions, spec, execute),
    );
  }

  // --- transactions -------------------------------------------------------------------------

  /** Lists transactions on every alive coordinator and merges (each id is on one partition's leader). */
  async listTransactions(
    filters: { states?: TransactionStateName[]; producerIds?: bigint[]; durationMs?: number } = {},
  ): Promise<{ transactions: TransactionListing[]; unavailablePartitions: number[] }> {
    const m = await this.metadataView();
    const coordinators = m.nodes.filter((n) => n.role === "coordinator" && n.alive);
    const request = {
      stateFilters: filters.states ?? [],
      producerIdFilters: (filters.producerIds ?? []).map(String),
      durationFilterMs: String(filters.durationMs ?? 0),
    };
    const answers = await Promise.all(
      coordinators.map(async (n) => {
        try {
          return {
            node: n,
            res: await this.transport.call(
              "TransactionCoordinator",
              n.address,
              "ListTransactions",
              request,
              this.requestTimeoutMs,
            ),
          };
        } catch (e) {
          this.logger.debug({ node: n.nodeId, err: String(e) }, "ListTransactions failed");
          return { node: n, res: undefined };
        }
      }),
    );
    const byId = new Map<string, TransactionListing>();
    const served = new Set<number>();
    // Per answering node: the partitions it leads but could not list (loading).
    const loadingOn = new Map<number, Set<number>>();
    for (const { node, res } of answers) {
      if (!res) continue;
      for (const t of res.transactions ?? []) {
        served.add(Number(t.partition));
        byId.set(String(t.transactionalId), {
          transactionalId: String(t.transactionalId),
          producerId: BigInt(t.producerId),
          state: t.state as TransactionStateName,
          partition: Number(t.partition),
          startTimeMs: Number(t.startTimeMs),
          coordinator: node.address,
        });
      }
      loadingOn.set(node.nodeId, new Set((res.unavailablePartitions ?? []).map(Number)));
    }
    // A partition is covered when some node listed transactions of it, or its leader (by
    // metadata) answered and no node called it loading. Otherwise the listing may miss ids: a
    // leader that did not answer, a partition with no leader, one still loading (perhaps on a
    // new leader that metadata does not name yet).
    const loading = new Set([...loadingOn.values()].flatMap((s) => [...s]));
    const txnTopic = m.topics.find((t) => t.name === "__transaction_state");
    const stillUnavailable = (txnTopic?.partitions ?? [])
      .filter(
        (p) => !served.has(p.partition) && (!loadingOn.has(p.leader) || loading.has(p.partition)),
      )
      .map((p) => p.partition)
      .sort((a, b) => a - b);
    return {
      transactions: [...byId.values()].sort((a, b) =>
        a.transactionalId.localeCompare(b.transactionalId),
      ),
      unavailablePartitions: stillUnavailable,
    };
  }

  async describeTransactions(ids: readonly string[]): Promise<TransactionDescription[]> {
    if (ids.length > DESCRIBE_IDS_MAX)
      throw new RangeError(`at most ${DESCRIBE_IDS_MAX} transactional ids per call`);
    return Promise.all(
      ids.map(async (id) => {
        try {
          const address = await this.finder.find("TRANSACTION", id);
          const res = await this.finder.call(
            "TRANSACTION",
            id,
            "TransactionCoordinator",
            "DescribeTransactions",
            { transactionalIds: [id] },
            { requestTimeoutMs: this.requestTimeoutMs },
          );
          const d = res.transactions[0];
          if (d.errorCode === "NOT_COORDINATOR" || d.errorCode === "COORDINATOR_LOAD_IN_PROGRESS")
            this.finder.forget("TRANSACTION", id);
          return describeFromWire(d, address);
        } catch (e) {
          const err = toClientError(e);
          return {
            transactionalId: id,
            error: err.message,
            ...(err.code ? { errorCode: err.code } : {}),
            state: "EMPTY",
            producerId: -1n,
            producerEpoch: -1,
            transactionTimeoutMs: 0,
            transactionStartTimeMs: 0,
            partitions: [],
            pendingMarkerPartitions: [],
            coordinatorEpoch: -1,
            coordinator: "",
          } as TransactionDescription;
        }
      }),
    );
  }

  /** Aborts the open transaction of a transactional id (its producer is fenced). */
  async abortTransaction(transactionalId: string): Promise<TransactionStateName> {
    const res = await this.wrap("abortTransaction", () =>
      this.finder.call(
        "TRANSACTION",
        transactionalId,
        "TransactionCoordinator",
        "AbortTransaction",
        { transactionalId },
        { requestTimeoutMs: this.requestTimeoutMs },
      ),
    );
    return res.state as TransactionStateName;
  }

  /** Writes an ABORT marker for one producer's hanging transaction on one partition (kafka-transactions.sh abort). */
  async abortPartitionTransaction(args: {
    topic: string;
    partition: number;
    producerId: bigint;
    producerEpoch: number;
    coordinatorEpoch: number;
  }): Promise<void> {
    const request = {
      topicPartition: { topic: args.topic, partition: args.partition },
      producerId: String(args.producerId),
      producerEpoch: args.producerEpoch,
      coordinatorEpoch: args.coordinatorEpoch,
    };
    await this.wrap("abortPartitionTransaction", () =>
      leaderCall(
        this.transport,
        this.metadata,
        args.topic,
        args.partition,
        "AbortPartitionTransaction",
        request,
        (r) => ({ code: r.errorCode, message: r.errorMessage }),
      ),
    );
  }

  /**
   * Kafka's deleteRecords: moves each partition's log start offset up to its offset (-1n: the
   * high watermark), on the partition's leader. Records below it are never read again; segments
   * holding only them are removed. Per partition: the new low watermark, or the error
   * (OFFSET_OUT_OF_RANGE past the high watermark, UNKNOWN_TOPIC_OR_PARTITION, ...). An offset
   * at or below the log start changes nothing and answers the current one.
   */
  async deleteRecords(
    items: ReadonlyArray<TopicPartition & { offset: bigint }>,
    options: { timeoutMs?: number } = {},
  ): Promise<
    Array<
      TopicPartition & { lowWatermark?: bigint; error?: { errorName: ErrorName; message: string } }
    >
  > {
    if (items.length > DELETE_RECORDS_PARTITIONS_MAX)
      throw new RangeError(`at most ${DELETE_RECORDS_PARTITIONS_MAX} partitions per call`);
    return Promise.all(
      items.map(async (it) => {
        const request = {
          partitions: [{ topic: it.topic, partition: it.partition, offset: String(it.offset) }],
          timeoutMs: options.timeoutMs ?? 0,
        };
        try {
          const res = await leaderCall(
            this.transport,
            this.metadata,
            it.topic,
            it.partition,
            "DeleteRecords",
            request,
            firstPartitionError,
            { requestTimeoutMs: this.requestTimeoutMs },
          );
          return {
            topic: it.topic,
            partition: it.partition,
            lowWatermark: BigInt(res.partitions[0].lowWatermark),
          };
        } catch (e) {
          const err = toClientError(e);
          return {
            topic: it.topic,
            partition: it.partition,
            error: {
              errorName: err.code ?? "UNKNOWN_SERVER_ERROR",
              message: err.cause instanceof TernError ? err.cause.message : err.message,
            },
          };
        }
      }),
    );
  }

  /**
   * An offset of one partition from its leader: "earliest" (log start), "latest" (high
   * watermark; LSO with read_committed), or the first offset whose timestamp is at or after
   * timestampMs (-1n when every record is older).
   */
  async listOffset(
    tp: TopicPartition,
    at: "earliest" | "latest" | { timestampMs: number },
    isolation: "read_committed" | "read_uncommitted" = "read_uncommitted",
  ): Promise<bigint> {
    const timestampMs =
      at === "earliest" ? "-2" : at === "latest" ? "-1" : String(Math.trunc(at.timestampMs));
    const request = {
      isolationLevel:
        isolation === "read_committed"
          ? ("READ_COMMITTED" as const)
          : ("READ_UNCOMMITTED" as const),
      partitions: [{ topic: tp.topic, partition: tp.partition, timestampMs }],
    };
    const res = await this.wrap("listOffset", () =>
      leaderCall(
        this.transport,
        this.metadata,
        tp.topic,
        tp.partition,
        "ListOffsets",
        request,
        firstPartitionError,
      ),
    );
    return BigInt(res.partitions[0].offset);
  }

  async describeProducers(
    tps: readonly TopicPartition[],
  ): Promise<Array<TopicPartition & { error?: string; producers: ProducerStateInfo[] }>> {
    return this.eachAtLeader(
      tps,
      async (tp) => {
        const res = await leaderCall(
          this.transport,
          this.metadata,
          tp.topic,
          tp.partition,
          "DescribeProducers",
          { partitions: [tp] },
          firstPartitionError,
        );
        return { producers: (res.partitions[0].producers ?? []).map(producerFromWire) };
      },
      { producers: [] },
    );
  }

  /** Each partition's cleaning figures, from its leader. */
  async describeLogCleaning(
    tps: readonly TopicPartition[],
  ): Promise<Array<TopicPartition & { error?: string; cleaning?: LogCleaningInfo }>> {
    return this.eachAtLeader(
      tps,
      async (tp) => {
        const res = await leaderCall(
          this.transport,
          this.metadata,
          tp.topic,
          tp.partition,
          "DescribeLogCleaning",
          { partitions: [tp] },
          firstPartitionError,
          { requestTimeoutMs: this.requestTimeoutMs },
        );
        const r = res.partitions[0]!;
        const cleaning: LogCleaningInfo = {
          compacted: r.compacted,
          dirtyRatio: r.dirtyRatio,
          cleanableBytes: Number(r.cleanableBytes),
          dirtyBytes: Number(r.dirtyBytes),
          lastCleanedOffset: BigInt(r.lastCleanedOffset),
        };
        return { cleaning };
      },
      {},
    );
  }

  /**
   * One call per partition at its leader, at most LEADER_CALLS_IN_FLIGHT_MAX at once (a topic
   * of thousands of partitions is not thousands of calls at once); a partition whose call fails
   * gets `failed` and its error.
   */
  private async eachAtLeader<T extends object, F extends object>(
    tps: readonly TopicPartition[],
    call: (tp: TopicPartition) => Promise<T>,
    failed: F,
  ): Promise<Array<TopicPartition & (T | (F & { error: string }))>> {
    const out: Array<TopicPartition & (T | (F & { error: string }))> = [];
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < tps.length) {
        const i = next++;
        const tp = tps[i]!;
        try {
          out[i] = { ...tp, ...(await call(tp)) };
        } catch (e) {
          out[i] = { ...tp, ...failed, error: toClientError(e).message };
        }
      }
    };
    await Promise.all(
      Array.from({ length: Math.min(LEADER_CALLS_IN_FLIGHT_MAX, tps.length) }, worker),
    );
    return out;
  }

  /**
   * Hanging transactions (kafka-transactions.sh find-hanging): transactions open longer than
   * maxTransactionTimeoutMs on partition leaders (all brokers, or only the given partitions)
   * that their coordinator no longer tracks on that partition, still open with the same start
   * offset after the coordinator was asked. Fails rather than guess when a coordinator cannot
   * answer for some candidate.
   */
  async findHangingTransactions(
    options: { maxTransactionTimeoutMs?: number; partitions?: TopicPartition[] } = {},
  ): Promise<HangingTransaction[]> {
    const m = await this.metadataView();
    const brokers = m.nodes.filter((n) => n.role === "broker" && n.alive);
    const request = {
      partitions: options.partitions ?? [],
      maxTransactionTimeoutMs: String(options.maxTransactionTimeoutMs ?? 0),
    };
    const answers = await Promise.all(
      brokers.map(async (b) => {
        const res = await this.transport
          .call("Broker", b.address, "ListHangingTransactions", request, this.requestTimeoutMs)
          .catch((e) => {
            this.logger.debug(
              { broker: b.nodeId, err: String(e) },
              "ListHangingTransactions failed",
            );
            return undefined;
          });
        return (res?.transactions ?? []).map((t): HangingTransaction => ({
          ...wireTp(t.topicPartition),
          producerId: BigInt(t.producerId),
          producerEpoch: Number(t.producerEpoch),
          coordinatorEpoch: Number(t.coordinatorEpoch),
          startOffset: BigInt(t.startOffset),
          startTimeMs: Number(t.startTimeMs),
          openMs: Number(t.openMs),
          broker: b.address,
          reason: "",
        }));
      }),
    );
    const candidates: HangingTransaction[] = answers.flat();
    const verdicts = await this.checkOpenTransactions(candidates);
    const untracked = candidates.flatMap((c, i) => {
      const v = verdicts[i]!;
      if (!v.hanging) return [];
      return [
        {
          ...c,
          reason: v.reason,
          ...(v.transactionalId !== undefined ? { transactionalId: v.transactionalId } : {}),
          ...(v.state !== undefined ? { coordinatorState: v.state } : {}),
        },
      ];
    });
    // A transaction that ended between the broker's answer and the coordinator's is closed
    // on the partition by now (its marker was acknowledged before it completed): read again.
    const stillOpen = await this.openTransactionsOf(untracked);
    return untracked
      .filter((h) => stillOpen.has(openKey(h.topic, h.partition, h.producerId, h.startOffset)))
      .sort((a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition);
  }

  /**
   * Asks the coordinators about open transactions found on partitions (Kafka's find-hanging
   * check): the transactional id of each producer id (ListTransactions filtered by producer
   * id), then that id's transaction (DescribeTransactions). Throws when some coordinator
   * cannot answer (no verdict is a guess).
   */
  async checkOpenTransactions(open: readonly OpenTransactionRef[]): Promise<CoordinatorVerdict[]> {
    if (open.length === 0) return [];
    const producerIds = [...new Set(open.map((o) => o.producerId))];
    const listed = await this.listTransactions({ producerIds });
    this.requireCovered(listed.unavailablePartitions);
    const idByProducer = new Map<bigint, string>();
    for (const t of listed.transactions)
      if (producerIds.includes(t.producerId)) idByProducer.set(t.producerId, t.transactionalId);
    // A producer id no listing names may be the previous id of a completing transaction whose id was rotated.
    let prepareIds: string[] = [];
    if (producerIds.some((p) => !idByProducer.has(p))) {
      const prepares = await this.listTransactions({ states: ["PREPARE_COMMIT", "PREPARE_ABORT"] });
      this.requireCovered(prepares.unavailablePartitions);
      prepareIds = prepares.transactions.map((t) => t.transactionalId);
    }
    const ids = [...new Set([...idByProducer.values(), ...prepareIds])];
    const descriptions = new Map<string, TransactionDescription | undefined>();
    for (let i = 0; i < ids.length; i += DESCRIBE_IDS_MAX) {
      for (const d of await this.describeTransactions(ids.slice(i, i + DESCRIBE_IDS_MAX))) {
        if (d.errorCode === "TRANSACTIONAL_ID_NOT_FOUND")
          descriptions.set(d.transactionalId, undefined);
        else if (d.error !== undefined)
          throw toClientError(
            new TernError(
              "COORDINATOR_NOT_AVAILABLE",
              `cannot check open transactions against the coordinator of ${d.transactionalId}: ${d.error}; retry`,
            ),
          );
        else descriptions.set(d.transactionalId, d);
      }
    }
    const rotatedPrepares = prepareIds
      .map((id) => descriptions.get(id))
      .filter(
        (d): d is TransactionDescription =>
          d !== undefined &&
          (d.state === "PREPARE_COMMIT" || d.state === "PREPARE_ABORT") &&
          d.producerEpoch === 0,
      );
    return open.map((o) =>
      judgeOpenTransaction(o, { idByProducer, descriptions, rotatedPrepares }),
    );
  }

  /** The producer whose open transaction on the partition starts at startOffset (kafka-transactions.sh abort --start-offset). */
  async openTransactionAt(tp: TopicPartition, startOffset: bigint): Promise<ProducerStateInfo> {
    const [r] = await this.describeProducers([tp]);
    if (r!.error !== undefined)
      throw toClientError(
        new TernError(
          "LEADER_NOT_AVAILABLE",
          `cannot read the producer state of ${tp.topic}-${tp.partition}: ${r!.error}`,
        ),
      );
    const open = r!.producers.filter((p) => p.currentTxnStartOffset >= 0n);
    const found = open.find((p) => p.currentTxnStartOffset === startOffset);
    if (found !== undefined) return found;
    const there =
      open.length === 0
        ? "there is no open transaction there"
        : `open transactions there start at ${open.map((p) => `${p.currentTxnStartOffset} (producer ${p.producerId})`).join(", ")}`;
    throw toClientError(
      new TernError(
        "INVALID_TXN_STATE",
        `no open transaction starts at offset ${startOffset} on ${tp.topic}-${tp.partition}; ${there}`,
      ),
    );
  }

  /**
   * Writes an ABORT marker for one producer's hanging transaction on one partition, found by
   * its start offset or given by producer id and epochs. Unless `force`, first asks the
   * coordinators and refuses a transaction they still track on the partition: its coordinator
   * will end it, and an abort here would break it if it commits.
   */
  async abortHangingTransaction(
    target: PartitionAbortTarget,
    options: { force?: boolean } = {},
  ): Promise<PartitionAbortSpec> {
    let spec: PartitionAbortSpec;
    if ("startOffset" in target) {
      const p = await this.openTransactionAt(target, target.startOffset);
      // A producer that never saw a marker reports coordinator epoch -1; 0 is at most any leader's.
      spec = {
        topic: target.topic,
        partition: target.partition,
        producerId: p.producerId,
        producerEpoch: p.producerEpoch,
        coordinatorEpoch: Math.max(0, p.coordinatorEpoch),
      };
    } else {
      spec = { ...target, coordinatorEpoch: Math.max(0, target.coordinatorEpoch) };
    }
    if (options.force !== true) {
      const [v] = await this.checkOpenTransactions([spec]);
      if (!v!.hanging) {
        const instead =
          v!.state === "ONGOING"
            ? `abort the whole transaction by its transactional id (${v!.transactionalId})`
            : "wait for its coordinator to write the marker";
        throw toClientError(
          new TernError(
            "INVALID_TXN_STATE",
            `refusing to abort producer ${spec.producerId} on ${spec.topic}-${spec.partition}: ${v!.reason}; ${instead} (--force skips this check)`,
          ),
        );
      }
    }
    await this.abortPartitionTransaction(spec);
    return spec;
  }

  /** Keys (openKey) of the open transactions on the partitions of `of`, read from their leaders. */
  private async openTransactionsOf(of: readonly TopicPartition[]): Promise<Set<string>> {
    const tps = [
      ...new Map(
        of.map((tp) => [
          `${tp.topic}\u0000${tp.partition}`,
          { topic: tp.topic, partition: tp.partition },
        ]),
      ).values(),
    ];
    const keys = new Set<string>();
    for (const r of await this.describeProducers(tps)) {
      if (r.error !== undefined)
        throw toClientError(
          new TernError(
            "LEADER_NOT_AVAILABLE",
            `cannot read the producer state of ${r.topic}-${r.partition} again: ${r.error}; retry`,
          ),
        );
      for (const p of r.producers)
        if (p.currentTxnStartOffset >= 0n)
          keys.add(openKey(r.topic, r.partition, p.producerId, p.currentTxnStartOffset));
    }
    return keys;
  }

  private requireCovered(unavailable: readonly number[]): void {
    if (unavailable.length === 0) return;
    throw toClientError(
      new TernError(
        "COORDINATOR_NOT_AVAILABLE",
        `cannot check open transactions against the coordinators: __transaction_state partitions ${unavailable.join(",")} have no answering leader; retry`,
      ),
    );
  }

  async close(): Promise<void> {
    this.metadata.close();
    if (this.ownsTransport) this.transport.close();
  }

  private async wrap<T>(what: string, f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (e) {
      throw toClientError(e, what);
    }
  }
}

function openKey(
  topic: string,
  partition: number,
  producerId: bigint,
  startOffset: bigint,
): string {
  return `${topic}\u0000${partition}\u0000${producerId}\u0000${startOffset}`;
}

function describeFromWire(
  d: WireTransactionDescription,
  coordinator: string,
): TransactionDescription {
  const out: TransactionDescription = {
    transactionalId: String(d.transactionalId),
    state: d.state as TransactionStateName,
    producerId: BigInt(d.producerId),
    producerEpoch: Number(d.producerEpoch),
    transactionTimeoutMs: Number(d.transactionTimeoutMs),
    transactionStartTimeMs: Number(d.transactionStartTimeMs),
    partitions: (d.partitions ?? []).map(wireTp),
    pendingMarkerPartitions: (d.pendingMarkerPartitions ?? []).map(wireTp),
    coordinatorEpoch: Number(d.coordinatorEpoch),
    coordinator,
  };
  if (d.errorCode !== "NONE") {
    out.error = `${d.errorCode}: ${d.errorMessage}`;
    out.errorCode = d.errorCode as ErrorName;
  }
  return out;
}

function producerFromWire(p: ProducerState__Output): ProducerStateInfo {
  return {
    producerId: BigInt(p.producerId),
    producerEpoch: Number(p.producerEpoch),
    lastSequence: Number(p.lastSequence),
    lastTimestampMs: Number(p.lastTimestampMs),
    coordinatorEpoch: Number(p.coordinatorEpoch),
    currentTxnStartOffset: BigInt(p.currentTxnStartOffset),
    currentTxnStartTimeMs: Number(p.currentTxnStartTimeMs),
  };
}

export type { TopicSpec, TopicOutcome, ErrorName };

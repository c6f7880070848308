// The client of the controller quorum that brokers, coordinators, the SDK and the CLI use.
// It follows NOT_CONTROLLER answers to the leader they name, moves to the next controller on
// transport errors, and retries only what the error table marks retriable, with capped
// exponential backoff plus jitter and a bounded number of attempts. Its calls go through a
// ServiceTransport (libs/runtime/transport.ts): a process's runtime's, or grpc-js's.
import type { PeerAddress } from "../common/config.js";
import { ERRORS, errorByCode, isTernError, TernError, type ErrorName } from "../common/errors.js";
import { fromGrpcError } from "../common/grpc-errors.js";
import type { ClientLogger as Logger } from "../common/client-logger.js";
import type { ClusterMetadata, Role, TopicInfo } from "./types.js";
import { aclFromWire, metadataFromWire, roleToWire, topicFromWire } from "./wire.js";
import type { AclBinding, AclFilter } from "../common/acl.js";
import type {
  ClientQuotaEntry,
  QuotaAlteration,
  QuotaFilterComponent,
} from "../common/client-quota.js";
import { quotaEntityToWire, quotaEntryFromWire, quotaFilterToWire } from "./quota-wire.js";
import {
  clientChannelCredentials,
  type ChannelCredentialsSource,
  type PasswordCredentials,
} from "../grpc/client-credentials.js";
import { GrpcClientCache } from "../grpc/grpc-client-cache.js";
import { GrpcServiceTransport } from "../grpc/grpc-service-transport.js";
import { ON_BEHALF_OF_HEADER } from "../grpc/call-headers.js";
import type {
  ItemError__Output,
  TopicInfo__Output,
  WatchMetadataResponse__Output,
} from "../common/proto-types/index.js";
import type {
  MethodName,
  RequestOf,
  ResponseOf,
  ServiceTransport,
  StatusError,
} from "../runtime/transport.js";
import type { RandomSource } from "../runtime/random-source.js";
import type { SchedulingClock, TimerHandle } from "../runtime/scheduler.js";
import { sleep } from "../runtime/sleep.js";
import { applicationClock, systemClock } from "../runtime/system-clock.js";
import { systemRandom } from "../runtime/system-random.js";

type ControllerMethod = Exclude<MethodName<"Controller">, "WatchMetadata">;

export const LEADER_ID_TRAILER = "tern-controller-leader-id";
const REQUEST_TIMEOUT_MS_DEFAULT = 5_000;
const ATTEMPTS_MAX_DEFAULT = 10;
const BACKOFF_MS_MIN = 50;
const BACKOFF_MS_MAX = 1_000;
/** A watch that hears nothing (not even a keepalive) for this long reconnects elsewhere. */
const WATCH_IDLE_MS_DEFAULT = 10_000;

export interface ControllerClientOptions {
  readonly controllers: readonly PeerAddress[];
  readonly logger: Logger;
  readonly requestTimeoutMs?: number;
  /** Attempts per call across controllers (default 10). */
  readonly attemptsMax?: number;
  readonly watchIdleMs?: number;
  /** A user's password sent with every call (clients; tern processes use their certificates). */
  readonly credentials?: PasswordCredentials | undefined;
  /** The calls' transport (a process's runtime's; its owner closes it); default grpc-js's. */
  readonly transport?: ServiceTransport;
  /** Without `transport`: the channels to use (shared with the caller, who closes them); default the client's own. */
  readonly clients?: GrpcClientCache;
  /** What the client's own channels present (without `clients`); default plaintext. */
  readonly channelCredentials?: ChannelCredentialsSource;
  /** Brokers and coordinators: the node watching metadata, which gets a slot of its own on the controller. */
  readonly watchingNode?: { readonly nodeId: number; readonly role: "broker" | "coordinator" };
  /**
   * Backoff pauses and the watch's timers: a service passes its runtime's. Default the
   * system's: a call's retry pause holds an application's process open (the call is awaited),
   * the watch's timers do not (a watch never keeps an application from exiting).
   */
  readonly clock?: SchedulingClock;
  /** Backoff jitter: a process passes its runtime's; default one seeded by the system. */
  readonly random?: RandomSource;
}

export interface TopicSpec {
  readonly name: string;
  readonly partitions: number;
  readonly replicationFactor: number;
  readonly config?: Record<string, string>;
}

export interface TopicOutcome {
  readonly name: string;
  /** Set when this topic failed; the others may have succeeded. */
  readonly error?: TernError;
  readonly topic?: TopicInfo;
}

export interface ControllerQuorumStatus {
  nodeId: number;
  leader: number;
  term: number;
  commitIndex: number;
  appliedIndex: number;
  metadataVersion: string;
  /** directoryId: the data-directory id the controller recorded ("" before it has). */
  voters: Array<{
    nodeId: number;
    address: string;
    voter: boolean;
    matchIndex: number;
    recentActive: boolean;
    directoryId: string;
  }>;
}

/** The per-item error of a response, or undefined for NONE. */
export function itemErrorOf(
  e: { code?: string | number; message?: string } | undefined | null,
): TernError | undefined {
  if (!e || e.code === undefined || e.code === "NONE" || e.code === 0) return undefined;
  // proto-loader gives enum names; a client with enums as numbers gives Kafka's numbers.
  const name = typeof e.code === "string" ? e.code : errorByCode(e.code).name;
  if (!ERRORS.has(name as ErrorName))
    return new TernError("UNKNOWN_SERVER_ERROR", `${String(e.code)}: ${e.message ?? ""}`);
  return new TernError(name as ErrorName, e.message || undefined);
}

/** Exponential backoff capped at BACKOFF_MS_MAX, with "equal jitter" (half fixed, half random). */
export function backoffMs(attempt: number, random: RandomSource): number {
  const cap = Math.min(BACKOFF_MS_MAX, BACKOFF_MS_MIN * 2 ** Math.min(attempt, 10));
  return cap / 2 + random.next() * (cap / 2);
}

export class ControllerClient {
  private readonly transport: ServiceTransport;
  /** The channels this client made itself (no transport or cache given): closed with it. */
  private readonly ownClients: GrpcClientCache | undefined;
  private readonly requestTimeoutMs: number;
  private readonly attemptsMax: number;
  private readonly clock: SchedulingClock;
  private readonly watchClock: SchedulingClock;
  private readonly random: RandomSource;
  /** Index into controllers of the one to try first (the last known leader). */
  private preferred = 0;
  private closed = false;
  private readonly watchStops = new Set<() => void>();

  constructor(private readonly opts: ControllerClientOptions) {
    if (opts.controllers.length === 0)
      throw new Error("ControllerClient needs at least one controller address");
    this.requestTimeoutMs = opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS_DEFAULT;
    this.attemptsMax = opts.attemptsMax ?? ATTEMPTS_MAX_DEFAULT;
    this.clock = opts.clock ?? applicationClock;
    this.watchClock = opts.clock ?? systemClock;
    this.random = opts.random ?? systemRandom();
    this.ownClients =
      opts.transport === undefined && opts.clients === undefined
        ? new GrpcClientCache({
            credentials: opts.channelCredentials ?? clientChannelCredentials(undefined),
          })
        : undefined;
    this.transport =
      opts.transport ??
      new GrpcServiceTransport({
        clients: (opts.clients ?? this.ownClients)!,
        password: opts.credentials,
      });
  }

  async metadata(options: { linearizable?: boolean } = {}): Promise<ClusterMetadata> {
    const res = await this.call("Metadata", { linearizable: options.linearizable ?? false });
    return metadataFromWire(res.metadata ?? {});
  }

  async allocateProducerIds(nodeId: number): Promise<{ firstProducerId: bigint; count: number }> {
    const res = await this.call("AllocateProducerIds", { nodeId });
    const error = itemErrorOf(res.error);
    if (error) throw error;
    return { firstProducerId: BigInt(res.firstProducerId), count: Number(res.count) };
  }

  async reportLeaders(
    nodeId: number,
    changes: Array<{ topic: string; partition: number; leader: number; term: number }>,
  ): Promise<void> {
    const res = await this.call("ReportLeaders", { nodeId, changes });
    const error = itemErrorOf(res.error);
    if (error) throw error;
  }

  async createTopics(
    topics: readonly TopicSpec[],
    options: { validateOnly?: boolean } = {},
  ): Promise<TopicOutcome[]> {
    const res = await this.call("CreateTopics", {
      topics: topics.map((t) => ({
        name: t.name,
        partitions: t.partitions,
        replicationFactor: t.replicationFactor,
        config: t.config ?? {},
      })),
      validateOnly: options.validateOnly ?? false,
    });
    return (res.results ?? []).map((r) => outcome(r));
  }

  /** Incremental config changes per topic: keys to set, keys to delete. */
  async alterTopicConfigs(
    changes: ReadonlyArray<{
      name: string;
      set?: Record<string, string>;
      delete?: readonly string[];
    }>,
    options: { validateOnly?: boolean } = {},
  ): Promise<TopicOutcome[]> {
    const res = await this.call("AlterTopicConfigs", {
      topics: changes.map((c) => ({
        name: c.name,
        set: c.set ?? {},
        delete: [...(c.delete ?? [])],
      })),
      validateOnly: options.validateOnly ?? false,
    });
    return (res.results ?? []).map((r) => outcome(r));
  }

  /** Raises partition counts to the given totals. */
  async createPartitions(
    changes: ReadonlyArray<{ name: string; totalCount: number }>,
    options: { validateOnly?: boolean } = {},
  ): Promise<TopicOutcome[]> {
    const res = await this.call("CreatePartitions", {
      topics: changes.map((c) => ({ name: c.name, totalCount: c.totalCount })),
      validateOnly: options.validateOnly ?? false,
    });
    return (res.results ?? []).map((r) => outcome(r));
  }

  async deleteTopics(names: readonly string[]): Promise<TopicOutcome[]> {
    const res = await this.call("DeleteTopics", { names: [...names] });
    return (res.results ?? []).map((r) => outcome(r));
  }

  async listTopics(options: { includeInternal?: boolean } = {}): Promise<string[]> {
    const res = await this.call("ListTopics", {
      includeInternal: options.includeInternal ?? false,
    });
    return (res.names ?? []).map(String);
  }

  async describeTopics(names: readonly string[] = []): Promise<TopicOutcome[]> {
    const res = await this.call("DescribeTopics", { names: [...names] });
    return (res.results ?? []).map((r) => outcome(r));
  }

  /** SCRAM credential changes (KIP-554's shape): each user's outcome stands alone. */
  async alterUserScramCredentials(change: {
    upsertions?: ReadonlyArray<{
      user: string;
      mechanism: string;
      iterations: number;
      salt: Buffer;
      saltedPassword: Buffer;
    }>;
    deletions?: ReadonlyArray<{ user: string; mechanism: string }>;
  }): Promise<Array<{ user: string; error?: TernError }>> {
    const res = await this.call("AlterUserScramCredentials", {
      upsertions: [...(change.upsertions ?? [])],
      deletions: [...(change.deletions ?? [])],
    });
    return (res.results ?? []).map((r) => {
      const error = itemErrorOf(r.error);
      return error ? { user: String(r.user ?? ""), error } : { user: String(r.user ?? "") };
    });
  }

  /** Users and their mechanisms (never salts or keys); every user when `users` is empty. */
  async describeUserScramCredentials(users: readonly string[] = []): Promise<
    Array<{
      user: string;
      error?: TernError;
      credentials: Array<{ mechanism: string; iterations: number }>;
    }>
  > {
    const res = await this.call("DescribeUserScramCredentials", { users: [...users] });
    return (res.results ?? []).map((r) => {
      const error = itemErrorOf(r.error);
      const credentials = (r.credentials ?? []).map((c) => ({
        mechanism: String(c.mechanism),
        iterations: Number(c.iterations),
      }));
      return error
        ? { user: String(r.user ?? ""), error, credentials }
        : { user: String(r.user ?? ""), credentials };
    });
  }

  /** One result per binding, in order: undefined when stored (or already there). */
  async createAcls(
    creations: readonly AclBinding[],
    onBehalfOf?: string,
  ): Promise<Array<TernError | undefined>> {
    const res = await this.call("CreateAcls", { creations: [...creations] }, onBehalfOf);
    return (res.results ?? []).map((r) => itemErrorOf(r));
  }

  async describeAcls(filter: AclFilter = {}, onBehalfOf?: string): Promise<AclBinding[]> {
    const res = await this.call("DescribeAcls", { filter }, onBehalfOf);
    return (res.acls ?? []).map(aclFromWire).filter((b): b is AclBinding => b !== undefined);
  }

  /** One result per filter, in order: the bindings it removed, or its error. */
  async deleteAcls(
    filters: readonly AclFilter[],
    onBehalfOf?: string,
  ): Promise<Array<{ error?: TernError; deleted: AclBinding[] }>> {
    const res = await this.call("DeleteAcls", { filters: [...filters] }, onBehalfOf);
    return (res.results ?? []).map((r) => {
      const deleted = (r.deleted ?? [])
        .map(aclFromWire)
        .filter((b): b is AclBinding => b !== undefined);
      const error = itemErrorOf(r.error);
      return error ? { error, deleted } : { deleted };
    });
  }

  /** One result per alteration, in order: undefined when applied (or valid, with validateOnly). */
  async alterClientQuotas(
    alterations: readonly QuotaAlteration[],
    validateOnly = false,
  ): Promise<Array<TernError | undefined>> {
    const res = await this.call("AlterClientQuotas", {
      entries: alterations.map((a) => ({
        entity: quotaEntityToWire(a.entity),
        ops: a.ops.map((o) =>
          o.remove === true ? { key: o.key, remove: true } : { key: o.key, value: o.value ?? 0 },
        ),
      })),
      validateOnly,
    });
    return (res.results ?? []).map((r) => itemErrorOf(r));
  }

  /** The entities matching every component (strict: and no other entity type), with their quotas. */
  async describeClientQuotas(
    components: readonly QuotaFilterComponent[],
    strict = false,
  ): Promise<ClientQuotaEntry[]> {
    const res = await this.call("DescribeClientQuotas", {
      components: components.map(quotaFilterToWire),
      strict,
    });
    return (res.entries ?? [])
      .map(quotaEntryFromWire)
      .filter((e): e is ClientQuotaEntry => e !== undefined);
  }

  /** Throws the per-item error (DUPLICATE_BROKER_REGISTRATION, INVALID_REQUEST) as a TernError. */
  async registerNode(node: {
    nodeId: number;
    role: Role;
    address: string;
    rack?: string;
    kafkaAddress?: string;
    incarnation: string;
  }): Promise<{ leaseMs: number }> {
    const res = await this.call("RegisterNode", {
      ...node,
      role: roleToWire(node.role),
      rack: node.rack ?? "",
      kafkaAddress: node.kafkaAddress ?? "",
    });
    const error = itemErrorOf(res.error);
    if (error) throw error;
    return { leaseMs: Number(res.leaseMs) };
  }

  /** Throws UNKNOWN_NODE when the node must register again. */
  async heartbeat(node: {
    nodeId: number;
    role: Role;
    incarnation: string;
  }): Promise<{ leaseMs: number }> {
    const res = await this.call("Heartbeat", { ...node, role: roleToWire(node.role) });
    const error = itemErrorOf(res.error);
    if (error) throw error;
    return { leaseMs: Number(res.leaseMs) };
  }

  /** Adds a controller (new id, empty data dir, already started) to the quorum as a voter. */
  async addController(nodeId: number, address: string): Promise<void> {
    const res = await this.call("AddController", { nodeId, address });
    const error = itemErrorOf(res.error);
    if (error) throw error;
  }

  /** Removes a controller from the quorum (for replacing a dead one). */
  async removeController(nodeId: number): Promise<void> {
    const res = await this.call("RemoveController", { nodeId });
    const error = itemErrorOf(res.error);
    if (error) throw error;
  }

  /** Records the data-directory id controller `nodeId` runs with (throws when another one is recorded). */
  async recordControllerDirectory(nodeId: number, directoryId: string): Promise<void> {
    const res = await this.call("RecordControllerDirectory", { nodeId, directoryId });
    const error = itemErrorOf(res.error);
    if (error) throw error;
  }

  /** The quorum as seen by one controller (the preferred one, or `controllerId`). */
  async describeCluster(controllerId?: number): Promise<ControllerQuorumStatus> {
    const res =
      controllerId === undefined
        ? await this.call("DescribeCluster", {})
        : await this.callOn(controllerId, "DescribeCluster", {});
    return {
      nodeId: Number(res.nodeId),
      leader: Number(res.leader),
      term: Number(res.term),
      commitIndex: Number(res.commitIndex),
      appliedIndex: Number(res.appliedIndex),
      metadataVersion: String(res.metadataVersion),
      voters: (res.voters ?? []).map((v) => ({
        nodeId: Number(v.nodeId),
        address: String(v.address),
        voter: Boolean(v.voter),
        matchIndex: Number(v.matchIndex),
        recentActive: Boolean(v.recentActive),
        directoryId: String(v.directoryId ?? ""),
      })),
    };
  }

  /**
   * Delivers a full view now and on every change, reconnecting (to the next controller) when a
   * stream fails or goes silent. Views never go backwards in version. Returns the stop function.
   */
  watchMetadata(listener: (m: ClusterMetadata) => void): () => void {
    let stopped = false;
    let lastVersion = -1n;
    let cancel: (() => void) | undefined;
    let idleTimer: TimerHandle | undefined;
    const clock = this.watchClock;
    let failures = 0;
    const idleMs = this.opts.watchIdleMs ?? WATCH_IDLE_MS_DEFAULT;
    const stop = (): void => {
      stopped = true;
      clock.clearTimeout(idleTimer);
      cancel?.();
      this.watchStops.delete(stop);
    };
    this.watchStops.add(stop);
    const connect = (): void => {
      if (stopped || this.closed) return;
      const target = this.opts.controllers[this.preferred]!;
      let ended = false;
      const resetIdle = (): void => {
        clock.clearTimeout(idleTimer);
        idleTimer = clock.setTimeout(() => cancelThis(), idleMs);
      };
      const reconnect = (why: string): void => {
        if (ended) return;
        ended = true;
        clock.clearTimeout(idleTimer);
        if (stopped || this.closed) return;
        failures += 1;
        this.rotate();
        const delay = backoffMs(failures, this.random);
        this.opts.logger.debug({ why, delayMs: Math.round(delay) }, "metadata watch reconnecting");
        clock.setTimeout(connect, delay);
      };
      const onMessage = (msg: WatchMetadataResponse__Output): void => {
        resetIdle();
        failures = 0;
        if (msg.keepalive || !msg.metadata) return;
        const m = metadataFromWire(msg.metadata);
        const v = BigInt(m.version);
        if (v <= lastVersion) return;
        lastVersion = v;
        try {
          listener(m);
        } catch (e) {
          this.opts.logger.error({ err: e }, "metadata listener threw");
        }
      };
      const cancelThis = this.transport.serverStream(
        "Controller",
        this.address(target.id),
        "WatchMetadata",
        {
          afterVersion: lastVersion < 0n ? "0" : String(lastVersion),
          node: this.opts.watchingNode ?? null,
        },
        {
          onMessage,
          onEnd: (e) => reconnect(e === undefined ? "stream ended" : String((e as Error).message)),
        },
      );
      cancel = cancelThis;
      resetIdle();
    };
    connect();
    return stop;
  }

  close(): void {
    this.closed = true;
    for (const stop of [...this.watchStops]) stop();
    this.ownClients?.close();
  }

  // --- internals -------------------------------------------------------------------------------

  private address(id: number): string {
    const peer = this.opts.controllers.find((p) => p.id === id);
    if (!peer) throw new TernError("UNKNOWN_NODE", `controller ${id} is not configured`);
    return `${peer.host}:${peer.port}`;
  }

  private rotate(): void {
    this.preferred = (this.preferred + 1) % this.opts.controllers.length;
  }

  private callOn<M extends ControllerMethod>(
    id: number,
    method: M,
    request: RequestOf<"Controller", M>,
    onBehalfOf?: string,
  ): Promise<ResponseOf<"Controller", M>> {
    let address: string;
    try {
      address = this.address(id);
    } catch (e) {
      return Promise.reject(e);
    }
    return this.transport.unary("Controller", address, method, request, {
      timeoutMs: this.requestTimeoutMs,
      // A broker forwarding a Kafka client's admin request names that client (admin-methods.ts).
      ...(onBehalfOf === undefined ? {} : { headers: { [ON_BEHALF_OF_HEADER]: onBehalfOf } }),
    });
  }

  /** One logical call: bounded attempts, following leader hints, backing off between rounds. */
  private async call<M extends ControllerMethod>(
    method: M,
    request: RequestOf<"Controller", M>,
    onBehalfOf?: string,
  ): Promise<ResponseOf<"Controller", M>> {
    let lastError: TernError | undefined;
    for (let attempt = 0; attempt < this.attemptsMax; attempt++) {
      if (this.closed) throw new TernError("SHUTTING_DOWN", "the controller client is closed");
      const target = this.opts.controllers[this.preferred]!;
      try {
        return await this.callOn(target.id, method, request, onBehalfOf);
      } catch (e) {
        const error = fromGrpcError(e);
        lastError = error;
        if (!error.retriable) throw error;
        const hinted = this.leaderHint(e, target.id);
        if (hinted !== undefined) {
          this.preferred = hinted;
          if (attempt === 0) continue; // go straight to the named leader once
        } else {
          this.rotate();
        }
        this.opts.logger.debug(
          { method, controller: target.id, error: error.errorName, attempt },
          "controller call failed; retrying",
        );
        await sleep(this.clock, backoffMs(attempt, this.random));
      }
    }
    throw lastError ?? new TernError("NOT_CONTROLLER", "no controller answered");
  }

  /** The index of the leader named in a NOT_CONTROLLER answer, if it is another configured controller. */
  private leaderHint(e: unknown, askedId: number): number | undefined {
    if (!isTernError(fromGrpcError(e), "NOT_CONTROLLER")) return undefined;
    const md = (e as Partial<StatusError> | undefined)?.metadata;
    const raw = typeof md?.get === "function" ? md.get(LEADER_ID_TRAILER)[0] : undefined;
    const id = raw === undefined ? NaN : Number(raw);
    if (!Number.isInteger(id) || id < 0 || id === askedId) return undefined;
    const index = this.opts.controllers.findIndex((c) => c.id === id);
    return index >= 0 ? index : undefined;
  }
}

function outcome(r: {
  name: string;
  error: ItemError__Output | null;
  topic?: TopicInfo__Output | null;
}): TopicOutcome {
  const error = itemErrorOf(r.error);
  const o: { name: string; error?: TernError; topic?: TopicInfo } = { name: String(r.name ?? "") };
  if (error) o.error = error;
  if (r.topic) o.topic = topicFromWire(r.topic);
  return o;
}

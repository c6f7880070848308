// The tern.v1.Controller handlers. Writes become commands proposed to the __controller group
// on the leader (a follower forwards them); reads come from this controller's applied state.
import { newTopicId } from "../../libs/metadata/topic-id.js";
import * as grpc from "@grpc/grpc-js";
import type { Clock } from "../../libs/runtime/clock.js";
import type { PeerAddress } from "../../libs/common/config.js";
import { isTernError, TernError, type ErrorName } from "../../libs/common/errors.js";
import type { Logger } from "../../libs/common/logger.js";
import type { RaftGroup } from "../../libs/raft-host/api.js";
import { metadataToWire, roleFromWire, topicToWire } from "../../libs/metadata/wire.js";
import {
  type Command,
  COMMAND_BYTES_MAX,
  encodeCommand,
  type TopicRequest,
} from "./command-codec.js";
import { FORWARDED_HEADER, notController, toControllerGrpcError } from "./controller-errors.js";
import type { ControllerSettings } from "./controller-settings.js";
import type { LeaderForwarder } from "./leader-forwarder.js";
import type { MetadataPublisher } from "./metadata-publisher.js";
import { TOPIC_CONFIG_RULES_VERSION } from "./topic-rules.js";
import { principalOfCall } from "../../libs/server/tls/peer-authorization.js";
import type { Principal } from "../../libs/server/tls/principal.js";
import {
  checkScramIterations,
  isScramMechanism,
  keysOfSaltedPassword,
  type ScramMechanism,
} from "../../libs/common/scram.js";
import { createAclsRequest, deleteAclsRequest, describeAclsRequest } from "./acl-requests.js";
import { aclEntries } from "./acl-store.js";
import { clientQuotaEntries } from "./client-quotas.js";
import { alterClientQuotasRequest, describeClientQuotasRequest } from "./client-quota-requests.js";
import { SCRAM_CHANGES_PER_REQUEST_MAX, scramCredentialsOf, scramEntries } from "./scram-users.js";
import {
  type CommandError,
  type CommandResult,
  type MetadataStateMachine,
  TOPICS_PER_REQUEST_MAX,
} from "./metadata-state-machine.js";
import type {
  AddControllerRequest__Output,
  AddControllerResponse,
  AllocateProducerIdsRequest__Output,
  AllocateProducerIdsResponse,
  AlterTopicConfigsRequest__Output,
  AlterTopicConfigsResponse,
  AlterUserScramCredentialsRequest__Output,
  AlterUserScramCredentialsResponse,
  ClusterMetadata as WireMetadata,
  ControllerHandlers,
  CreatePartitionsRequest__Output,
  CreatePartitionsResponse,
  CreateTopicsRequest__Output,
  CreateTopicsResponse,
  DeleteTopicsRequest__Output,
  DeleteTopicsResponse,
  DescribeClusterResponse,
  DescribeTopicsRequest__Output,
  DescribeTopicsResponse,
  DescribeUserScramCredentialsRequest__Output,
  DescribeUserScramCredentialsResponse,
  HeartbeatRequest__Output,
  HeartbeatResponse,
  ItemError,
  ListTopicsRequest__Output,
  ListTopicsResponse,
  MetadataRequest__Output,
  MetadataResponse,
  RegisterNodeRequest__Output,
  RegisterNodeResponse,
  RemoveControllerRequest__Output,
  RemoveControllerResponse,
  ReportLeadersRequest__Output,
  ReportLeadersResponse,
  WatchMetadataRequest__Output,
  WatchMetadataResponse,
} from "../../libs/common/proto-types/index.js";
import type { AsyncHandlers, AsyncUnaryHandler } from "../../libs/server/unary-handler.js";
import type { MethodName, RequestOf } from "../../libs/runtime/transport.js";

export interface ControllerServiceDeps {
  readonly nodeId: number;
  readonly group: RaftGroup;
  readonly sm: MetadataStateMachine;
  readonly controllers: readonly PeerAddress[];
  readonly forwarder: LeaderForwarder;
  readonly publisher: MetadataPublisher;
  readonly settings: ControllerSettings;
  readonly clock: Clock;
  readonly logger: Logger;
  /** Called after the replicated controller addresses changed on this node (updates peer addresses). */
  readonly onControllersChanged: () => void;
  /** True when the gRPC listener runs TLS: SCRAM credentials are then watched by peer certificates only. */
  readonly tls?: boolean;
  /**
   * Metadata's response serializer, when the method passes bytes through (compose.ts): a view's
   * answer is then encoded once per version, not once per request.
   */
  readonly encodeMetadataResponse?: (r: MetadataResponse) => Buffer;
}

/** What a handler reads of its call: the metadata (was the request forwarded already?). */
type Call = { readonly metadata: grpc.Metadata };
/** The unary methods (WatchMetadata streams: implementation() wires it apart). */
type UnaryHandlers = Required<Omit<AsyncHandlers<ControllerHandlers>, "WatchMetadata">>;
type UnaryMethod = keyof UnaryHandlers & Exclude<MethodName<"Controller">, "WatchMetadata">;
type Res<M extends UnaryMethod> = Awaited<ReturnType<UnaryHandlers[M]>>;

const NO_ERROR: ItemError = { code: "NONE", message: "" };

function itemError(e: CommandError | undefined): ItemError {
  return e ? { code: e.error, message: e.message } : NO_ERROR;
}

function int(value: unknown, what: string): number {
  const n = typeof value === "string" ? Number(value) : value;
  if (typeof n !== "number" || !Number.isInteger(n))
    throw new TernError("INVALID_REQUEST", `${what} must be an integer`);
  return n;
}

/** A request's topic list: INVALID_REQUEST unless it holds 1..TOPICS_PER_REQUEST_MAX entries. */
function requestTopics<T>(list: T[] | null | undefined, method: string, what: string): T[] {
  const items = Array.isArray(list) ? list : [];
  if (items.length === 0 || items.length > TOPICS_PER_REQUEST_MAX)
    throw new TernError(
      "INVALID_REQUEST",
      `${method} needs 1..${TOPICS_PER_REQUEST_MAX} ${what}, got ${items.length}`,
    );
  return items;
}

export class ControllerService {
  /** The last Metadata answer's bytes and the view they encode (metadataResponse()). */
  private encodedMetadata: { key: string; bytes: Buffer } | undefined;
  constructor(private readonly deps: ControllerServiceDeps) {}

  /**
   * The current view in wire form, with this controller's idea of the leader. `secrets` adds the
   * SCRAM credentials (WatchMetadata streams of tern processes only: their Kafka listeners verify).
   */
  wireView(secrets = false): { version: bigint; metadata: WireMetadata } {
    const m = this.deps.sm.metadata(this.deps.group.leader());
    m.controllers = this.controllerList();
    if (secrets) {
      m.scramCredentials = scramCredentialsOf(this.deps.sm.scramCredentials());
      m.acls = aclEntries(this.deps.sm.aclStore());
      m.clientQuotas = clientQuotaEntries(this.deps.sm.clientQuotaStore());
    }
    return { version: this.deps.sm.version(), metadata: metadataToWire(m) };
  }

  /**
   * The node id whose own watch slot this call takes (metadata-publisher.ts), or undefined for a
   * client slot: the node it names must be registered with that role, and with TLS the caller's
   * certificate must be a peer's of that role. Without TLS the claim is taken as made (anyone
   * reaching the port may register nodes too): the reservation keeps ordinary clients from
   * starving the cluster's processes, not impostors (docs/security.md).
   */
  private watchingNode(
    claim: { nodeId?: number; role?: string } | null | undefined,
    principal: Principal | undefined,
  ): number | undefined {
    if (!claim) return undefined;
    const nodeId = Number(claim.nodeId ?? 0);
    const role = String(claim.role ?? "");
    if (principal !== undefined && (principal.kind !== "peer" || principal.role !== role))
      return undefined;
    const registered = this.deps.sm
      .metadata()
      .nodes.some((n) => n.nodeId === nodeId && n.role === role);
    return registered ? nodeId : undefined;
  }

  /** The quorum's addresses: configuration plus runtime membership changes. */
  controllerList(): PeerAddress[] {
    return this.deps.sm.controllers(this.deps.controllers);
  }

  implementation(): grpc.UntypedServiceImplementation {
    const handlers: UnaryHandlers = {
      RegisterNode: (req, call) =>
        this.onLeader("RegisterNode", req, call, () => this.registerNode(req)),
      Heartbeat: (req, call) => this.onLeader("Heartbeat", req, call, () => this.heartbeat(req)),
      CreateTopics: (req, call) =>
        this.onLeader("CreateTopics", req, call, () => this.createTopics(req)),
      DeleteTopics: (req, call) =>
        this.onLeader("DeleteTopics", req, call, () => this.deleteTopics(req)),
      AlterTopicConfigs: (req, call) =>
        this.onLeader("AlterTopicConfigs", req, call, () => this.alterTopicConfigs(req)),
      CreatePartitions: (req, call) =>
        this.onLeader("CreatePartitions", req, call, () => this.createPartitions(req)),
      AllocateProducerIds: (req, call) =>
        this.onLeader("AllocateProducerIds", req, call, () => this.allocateProducerIds(req)),
      ReportLeaders: (req, call) =>
        this.onLeader("ReportLeaders", req, call, () => this.reportLeaders(req)),
      // Admin reads are linearizable (create-then-describe sees the topic): leader + read barrier.
      ListTopics: (req, call) =>
        this.onLeader("ListTopics", req, call, async () => {
          await this.readBarrier();
          return this.listTopics(req);
        }),
      DescribeTopics: (req, call) =>
        this.onLeader("DescribeTopics", req, call, async () => {
          await this.readBarrier();
          return this.describeTopics(req);
        }),
      Metadata: (req, call) => this.metadata(req, call),
      DescribeCluster: async () => this.describeCluster(),
      AddController: (req, call) =>
        this.onLeader("AddController", req, call, () => this.addController(req)),
      RemoveController: (req, call) =>
        this.onLeader("RemoveController", req, call, () => this.removeController(req)),
      RecordControllerDirectory: (req, call) =>
        this.onLeader("RecordControllerDirectory", req, call, async () => {
          const r = await this.propose({
            type: "setControllerDirectory",
            nodeId: int(req.nodeId, "node_id"),
            directoryId: String(req.directoryId ?? ""),
          });
          return { error: itemError("error" in r ? r.error : undefined) };
        }),
      AlterUserScramCredentials: (req, call) =>
        this.onLeader("AlterUserScramCredentials", req, call, () =>
          this.alterUserScramCredentials(req),
        ),
      DescribeUserScramCredentials: (req, call) =>
        this.onLeader("DescribeUserScramCredentials", req, call, async () => {
          await this.readBarrier();
          return this.describeUserScramCredentials(req);
        }),
      CreateAcls: (req, call) =>
        this.onLeader("CreateAcls", req, call, () =>
          createAclsRequest(req, (c) => this.propose(c)),
        ),
      DescribeAcls: (req, call) =>
        this.onLeader("DescribeAcls", req, call, async () => {
          await this.readBarrier();
          return describeAclsRequest(req, this.deps.sm.aclStore());
        }),
      DeleteAcls: (req, call) =>
        this.onLeader("DeleteAcls", req, call, () =>
          deleteAclsRequest(req, (c) => this.propose(c)),
        ),
      AlterClientQuotas: (req, call) =>
        this.onLeader("AlterClientQuotas", req, call, () =>
          alterClientQuotasRequest(req, (c) => this.propose(c)),
        ),
      DescribeClientQuotas: (req, call) =>
        this.onLeader("DescribeClientQuotas", req, call, async () => {
          await this.readBarrier();
          return describeClientQuotasRequest(req, this.deps.sm.clientQuotaStore());
        }),
    };
    const impl: grpc.UntypedServiceImplementation = {};
    // Each handler was checked against its method above; here a handler is a handler.
    for (const [name, handler] of Object.entries(handlers) as Array<
      [string, AsyncUnaryHandler<unknown>]
    >)
      impl[name] = this.unary(name, handler) as grpc.UntypedHandleCall;
    impl.WatchMetadata = ((
      call: grpc.ServerWritableStream<WatchMetadataRequest__Output, WatchMetadataResponse>,
    ) => {
      try {
        const after = BigInt(String(call.request?.afterVersion ?? "0") || "0");
        const principal = this.deps.tls ? principalOfCall(call as never) : undefined;
        // Credentials go to tern processes only; without TLS there are no identities (development mode).
        const secrets = principal === undefined || principal.kind === "peer";
        this.deps.publisher.subscribe(
          call,
          after,
          secrets,
          this.watchingNode(call.request?.node, principal),
        );
      } catch (e) {
        const error = isTernError(e) ? e : new TernError("INVALID_REQUEST", (e as Error).message);
        // grpc-js sends a server stream's status from its 'error' handler; destroy() would
        // leave the call unanswered (the client waiting for its idle timeout).
        call.emit("error", toControllerGrpcError(error));
      }
    }) as grpc.UntypedHandleCall;
    return impl;
  }

  private unary(
    method: string,
    handler: AsyncUnaryHandler<unknown>,
  ): grpc.handleUnaryCall<unknown, unknown> {
    return (call, callback) => {
      handler(call.request, call).then(
        (res) => callback(null, res),
        (e: unknown) => {
          const error = isTernError(e)
            ? e
            : new TernError("UNKNOWN_SERVER_ERROR", e instanceof Error ? e.message : String(e));
          if (!isTernError(e))
            this.deps.logger.error({ err: e, method }, "unexpected error in controller handler");
          callback(toControllerGrpcError(error), null);
        },
      );
    };
  }

  /** Runs `local` on the leader, or forwards the call there (once), or answers NOT_CONTROLLER. */
  private async onLeader<M extends UnaryMethod>(
    method: M,
    request: RequestOf<"Controller", M>,
    call: Call,
    local: () => Promise<Res<M>>,
  ): Promise<Res<M>> {
    const { group, forwarder, nodeId, settings } = this.deps;
    const controllers = this.controllerList();
    if (group.isLeader()) {
      try {
        return await local();
      } catch (e) {
        if (!isTernError(e, "NOT_LEADER_OR_FOLLOWER")) throw e;
      }
    }
    const leader = group.leader();
    if (call.metadata.get(FORWARDED_HEADER).length > 0)
      throw notController(leader, controllers, "request was already forwarded once");
    if (leader < 0 || leader === nodeId)
      throw notController(leader, controllers, "no leader is elected right now");
    // The leader answers method M's message; TypeScript cannot relate client and handler types through M.
    return (await forwarder.forward(leader, method, request, settings.proposeTimeoutMs)) as Res<M>;
  }

  private async propose(command: Command): Promise<CommandResult> {
    const data = encodeCommand(command);
    if (data.length > COMMAND_BYTES_MAX)
      throw new TernError(
        "INVALID_REQUEST",
        `request of ${data.length} bytes exceeds ${COMMAND_BYTES_MAX}`,
      );
    const r = await this.deps.group.propose<CommandResult>(data, {
      timeoutMs: this.deps.settings.proposeTimeoutMs,
    });
    if (r.result.type === "invalid")
      throw new TernError(r.result.error.error, r.result.error.message);
    return r.result;
  }

  private nodeIdentity(req: { nodeId: number; role: unknown }): {
    nodeId: number;
    role: "broker" | "coordinator";
  } {
    const nodeId = int(req.nodeId, "node_id");
    const role = roleFromWire(req.role);
    if (!role)
      throw new TernError(
        "INVALID_REQUEST",
        `role ${String(req.role)} is invalid: BROKER or COORDINATOR`,
      );
    return { nodeId, role };
  }

  private async registerNode(req: RegisterNodeRequest__Output): Promise<RegisterNodeResponse> {
    const { nodeId, role } = this.nodeIdentity(req);
    const rack = typeof req.rack === "string" && req.rack !== "" ? req.rack : undefined;
    const kafkaAddress =
      typeof req.kafkaAddress === "string" && req.kafkaAddress !== ""
        ? req.kafkaAddress
        : undefined;
    const r = await this.propose({
      type: "register",
      nodeId,
      role,
      address: String(req.address ?? ""),
      incarnation: String(req.incarnation ?? ""),
      nowMs: this.deps.clock.nowMs(),
      leaseMs: this.deps.settings.nodeLeaseMs,
      ...(rack ? { rack } : {}),
      ...(kafkaAddress ? { kafkaAddress } : {}),
    });
    return {
      error: itemError("error" in r ? r.error : undefined),
      leaseMs: this.deps.settings.nodeLeaseMs,
    };
  }

  private async heartbeat(req: HeartbeatRequest__Output): Promise<HeartbeatResponse> {
    const { nodeId, role } = this.nodeIdentity(req);
    const beat = {
      nodeId,
      role,
      incarnation: String(req.incarnation ?? ""),
      nowMs: this.deps.clock.nowMs(),
      leaseMs: this.deps.settings.nodeLeaseMs,
    };
    // A live node's lease with half or more left needs no entry; the leader answers it as is.
    if (!this.deps.sm.heartbeatNeedsWrite(beat))
      return { error: itemError(undefined), leaseMs: this.deps.settings.nodeLeaseMs };
    const r = await this.propose({ type: "heartbeat", ...beat });
    return {
      error: itemError("error" in r ? r.error : undefined),
      leaseMs: this.deps.settings.nodeLeaseMs,
    };
  }

  private async createTopics(req: CreateTopicsRequest__Output): Promise<CreateTopicsResponse> {
    const list = requestTopics(req.topics, "CreateTopics", "topics");
    const topics: TopicRequest[] = list.map((t) => ({
      name: String(t.name ?? ""),
      partitions: Number(t.partitions ?? 0),
      replicationFactor: Number(t.replicationFactor ?? 0),
      config: { ...(t.config ?? {}) },
      id: newTopicId(),
    }));
    const r = await this.propose({
      type: "createTopics",
      topics,
      validateOnly: Boolean(req.validateOnly),
      configRules: TOPIC_CONFIG_RULES_VERSION,
    });
    if (r.type !== "createTopics")
      throw new TernError("UNKNOWN_SERVER_ERROR", `unexpected result ${r.type}`);
    return {
      results: r.results.map((x) => ({
        name: x.name,
        error: itemError(x.error),
        ...(x.topic ? { topic: topicToWire(x.topic) } : {}),
      })),
    };
  }

  private async deleteTopics(req: DeleteTopicsRequest__Output): Promise<DeleteTopicsResponse> {
    const names = requestTopics(req.names, "DeleteTopics", "names").map(String);
    const r = await this.propose({ type: "deleteTopics", names });
    if (r.type !== "deleteTopics")
      throw new TernError("UNKNOWN_SERVER_ERROR", `unexpected result ${r.type}`);
    return { results: r.results.map((x) => ({ name: x.name, error: itemError(x.error) })) };
  }

  private async alterTopicConfigs(
    req: AlterTopicConfigsRequest__Output,
  ): Promise<AlterTopicConfigsResponse> {
    const list = requestTopics(req.topics, "AlterTopicConfigs", "topics");
    const topics = list.map((t) => ({
      name: String(t.name ?? ""),
      set: { ...(t.set ?? {}) },
      delete: Array.isArray(t.delete) ? t.delete.map(String) : [],
    }));
    const r = await this.propose({
      type: "alterConfigs",
      topics,
      validateOnly: Boolean(req.validateOnly),
      configRules: TOPIC_CONFIG_RULES_VERSION,
    });
    if (r.type !== "alterConfigs")
      throw new TernError("UNKNOWN_SERVER_ERROR", `unexpected result ${r.type}`);
    return {
      results: r.results.map((x) => ({
        name: x.name,
        error: itemError(x.error),
        ...(x.topic ? { topic: topicToWire(x.topic) } : {}),
      })),
    };
  }

  private async createPartitions(
    req: CreatePartitionsRequest__Output,
  ): Promise<CreatePartitionsResponse> {
    const list = requestTopics(req.topics, "CreatePartitions", "topics");
    const topics = list.map((t) => ({
      name: String(t.name ?? ""),
      totalCount: Number(t.totalCount ?? 0),
    }));
    const r = await this.propose({
      type: "createPartitions",
      topics,
      validateOnly: Boolean(req.validateOnly),
    });
    if (r.type !== "createPartitions")
      throw new TernError("UNKNOWN_SERVER_ERROR", `unexpected result ${r.type}`);
    return {
      results: r.results.map((x) => ({
        name: x.name,
        error: itemError(x.error),
        ...(x.topic ? { topic: topicToWire(x.topic) } : {}),
      })),
    };
  }

  private async allocateProducerIds(
    req: AllocateProducerIdsRequest__Output,
  ): Promise<AllocateProducerIdsResponse> {
    const r = await this.propose({
      type: "allocateProducerIds",
      nodeId: int(req.nodeId, "node_id"),
    });
    if (r.type !== "allocateProducerIds")
      throw new TernError("UNKNOWN_SERVER_ERROR", `unexpected result ${r.type}`);
    if (r.error) return { error: itemError(r.error), firstProducerId: "0", count: 0 };
    return { error: NO_ERROR, firstProducerId: String(r.firstProducerId), count: r.count };
  }

  private async reportLeaders(req: ReportLeadersRequest__Output): Promise<ReportLeadersResponse> {
    const changes = (Array.isArray(req.changes) ? req.changes : []).map((c) => ({
      topic: String(c.topic ?? ""),
      partition: int(c.partition, "partition"),
      leader: int(c.leader, "leader"),
      term: int(c.term, "term"),
    }));
    const r = await this.propose({
      type: "reportLeaders",
      nodeId: int(req.nodeId, "node_id"),
      changes,
    });
    return { error: itemError("error" in r ? r.error : undefined) };
  }

  private async alterUserScramCredentials(
    req: AlterUserScramCredentialsRequest__Output,
  ): Promise<AlterUserScramCredentialsResponse> {
    const upsertions = Array.isArray(req.upsertions) ? req.upsertions : [];
    const deletions = Array.isArray(req.deletions) ? req.deletions : [];
    const total = upsertions.length + deletions.length;
    if (total === 0 || total > SCRAM_CHANGES_PER_REQUEST_MAX) {
      throw new TernError(
        "INVALID_REQUEST",
        `AlterUserScramCredentials needs 1..${SCRAM_CHANGES_PER_REQUEST_MAX} changes, got ${total}`,
      );
    }
    const mechanismOf = (m: unknown): string =>
      m === undefined || m === null || m === "" ? "SCRAM-SHA-512" : String(m);
    // Keys are derived here, on the leader: the log and every snapshot hold StoredKey and ServerKey only.
    const pre: Array<{ user: string; code: ErrorName; message: string }> = [];
    const entries = upsertions.flatMap((u) => {
      const user = String(u.user ?? "");
      const mechanism = mechanismOf(u.mechanism);
      const iterations = Number(u.iterations ?? 0);
      const salted = Buffer.from(u.saltedPassword ?? []);
      const bad: { code: ErrorName; message: string } | undefined = !isScramMechanism(mechanism)
        ? {
            code: "UNSUPPORTED_SASL_MECHANISM",
            message: `mechanism ${mechanism} is not supported: SCRAM-SHA-512 or SCRAM-SHA-256`,
          }
        : checkScramIterations(iterations) !== undefined
          ? { code: "INVALID_REQUEST", message: checkScramIterations(iterations)! }
          : salted.length !== (mechanism === "SCRAM-SHA-512" ? 64 : 32)
            ? {
                code: "INVALID_REQUEST",
                message: `salted_password must be ${mechanism === "SCRAM-SHA-512" ? 64 : 32} bytes for ${mechanism}`,
              }
            : undefined;
      if (bad) {
        pre.push({ user, ...bad });
        return [];
      }
      const { storedKey, serverKey } = keysOfSaltedPassword(mechanism as ScramMechanism, salted);
      return [
        {
          user,
          mechanism,
          iterations,
          salt: Buffer.from(u.salt ?? []).toString("base64"),
          storedKey: storedKey.toString("base64"),
          serverKey: serverKey.toString("base64"),
        },
      ];
    });
    const dels = deletions.map((d) => ({
      user: String(d.user ?? ""),
      mechanism: mechanismOf(d.mechanism),
    }));
    const results = pre.map((p) => ({ user: p.user, error: { code: p.code, message: p.message } }));
    if (entries.length + dels.length === 0) return { results };
    const r = await this.propose({ type: "alterScram", upsertions: entries, deletions: dels });
    if (r.type !== "alterScram")
      throw new TernError("UNKNOWN_SERVER_ERROR", `unexpected result ${r.type}`);
    return {
      results: [
        ...results,
        ...r.outcomes.map((x) => ({ user: x.user, error: itemError(x.error) })),
      ],
    };
  }

  private describeUserScramCredentials(
    req: DescribeUserScramCredentialsRequest__Output,
  ): DescribeUserScramCredentialsResponse {
    const entries = scramEntries(this.deps.sm.scramCredentials());
    const users: string[] =
      Array.isArray(req.users) && req.users.length > 0
        ? req.users.map(String)
        : [...new Set(entries.map((e) => e.user))];
    return {
      results: users.map((user) => {
        const mine = entries.filter((e) => e.user === user);
        if (mine.length === 0)
          return {
            user,
            error: {
              code: "RESOURCE_NOT_FOUND",
              message: `user "${user}" has no SCRAM credential`,
            },
            credentials: [],
          };
        return {
          user,
          error: NO_ERROR,
          credentials: mine.map((e) => ({ mechanism: e.mechanism, iterations: e.iterations })),
        };
      }),
    };
  }

  private voters(): Set<number> {
    const conf = this.deps.group.status().confState;
    return new Set([...conf.voters, ...conf.outgoingVoters]);
  }

  private async addController(req: AddControllerRequest__Output): Promise<AddControllerResponse> {
    const nodeId = int(req.nodeId, "node_id");
    if (this.voters().has(nodeId))
      return {
        error: { code: "INVALID_REQUEST", message: `controller ${nodeId} is already a voter` },
      };
    const r = await this.propose({
      type: "setController",
      nodeId,
      address: String(req.address ?? ""),
    });
    if ("error" in r && r.error) return { error: itemError(r.error) };
    this.deps.onControllersChanged();
    await this.deps.group.addVoter(nodeId, { timeoutMs: this.deps.settings.proposeTimeoutMs });
    this.deps.logger.info({ nodeId, address: req.address }, "controller added to the quorum");
    return { error: NO_ERROR };
  }

  private async removeController(
    req: RemoveControllerRequest__Output,
  ): Promise<RemoveControllerResponse> {
    const nodeId = int(req.nodeId, "node_id");
    const voters = this.voters();
    if (!voters.has(nodeId))
      return { error: { code: "INVALID_REQUEST", message: `controller ${nodeId} is not a voter` } };
    if (voters.size <= 1)
      return {
        error: {
          code: "INVALID_REQUEST",
          message: "the last voter of the quorum cannot be removed",
        },
      };
    await this.deps.group.removeNode(nodeId, { timeoutMs: this.deps.settings.proposeTimeoutMs });
    this.deps.logger.info({ nodeId }, "controller removed from the quorum");
    // The voter is gone whatever happens next; forgetting its address is best effort.
    try {
      await this.propose({ type: "removeController", nodeId });
    } catch (e) {
      this.deps.logger.warn({ err: e, nodeId }, "removed controller's address not forgotten yet");
    }
    return { error: NO_ERROR };
  }

  private listTopics(req: ListTopicsRequest__Output): ListTopicsResponse {
    const names = this.deps.sm
      .metadata()
      .topics.filter((t) => req.includeInternal || !t.internal)
      .map((t) => t.name);
    return { names };
  }

  private describeTopics(req: DescribeTopicsRequest__Output): DescribeTopicsResponse {
    const topics = this.deps.sm.metadata().topics;
    const names: string[] =
      Array.isArray(req.names) && req.names.length > 0
        ? req.names.map(String)
        : topics.map((t) => t.name);
    return {
      results: names.map((name) => {
        const t = topics.find((x) => x.name === name);
        return t
          ? { name, error: NO_ERROR, topic: topicToWire(t) }
          : {
              name,
              error: {
                code: "UNKNOWN_TOPIC_OR_PARTITION",
                message: `topic "${name}" does not exist`,
              },
            };
      }),
    };
  }

  private async metadata(req: MetadataRequest__Output, call: Call): Promise<MetadataResponse> {
    if (!req.linearizable) return this.metadataResponse();
    return this.onLeader("Metadata", req, call, async () => {
      await this.readBarrier();
      return this.metadataResponse();
    });
  }

  /** The current view's answer; encoded once per view when the serializer takes bytes. */
  private metadataResponse(): MetadataResponse {
    const encode = this.deps.encodeMetadataResponse;
    if (encode === undefined) return { metadata: this.wireView().metadata };
    // What wireView() reads: the version, the leader, the quorum's addresses.
    const key = `${this.deps.sm.version()}|${this.deps.group.leader()}|${JSON.stringify(this.controllerList())}`;
    if (this.encodedMetadata?.key !== key)
      this.encodedMetadata = { key, bytes: encode({ metadata: this.wireView().metadata }) };
    // A Buffer: the method's serializer passes it through (compose.ts).
    return this.encodedMetadata.bytes as unknown as MetadataResponse;
  }

  private readBarrier(): Promise<void> {
    return this.deps.group.readBarrier({ timeoutMs: this.deps.settings.proposeTimeoutMs });
  }

  private describeCluster(): DescribeClusterResponse {
    const status = this.deps.group.status();
    const voters = new Set([...status.confState.voters, ...status.confState.outgoingVoters]);
    const known = this.controllerList();
    const ids = new Set([...voters, ...known.map((c) => c.id)]);
    return {
      nodeId: this.deps.nodeId,
      leader: status.leader,
      term: status.term,
      commitIndex: String(status.commit),
      appliedIndex: String(status.applied),
      metadataVersion: String(this.deps.sm.version()),
      voters: [...ids]
        .sort((a, b) => a - b)
        .map((id) => {
          const peer = known.find((c) => c.id === id);
          const progress = status.progress.get(id);
          return {
            nodeId: id,
            address: peer ? `${peer.host}:${peer.port}` : "",
            voter: voters.has(id),
            matchIndex: String(progress?.match ?? 0),
            recentActive: progress?.recentActive ?? false,
            directoryId: this.deps.sm.controllerDirectory(id) ?? "",
          };
        }),
    };
  }
}

// What every tern node process stands on, below its role's services: the data-directory claim,
// the one Raft host (its transport registered on the process's gRPC server), the client of the
// controller quorum, and, for brokers and coordinators, the cluster view that the controllers'
// metadata watch keeps current, node membership (registration and heartbeats) and readiness.
// A role's compose() opens one, builds its services over it, and hands drain and close to it
// in the order the process needs: the role's parts first, the node's last.
import type { Role as ProcessRole } from "../common/config.js";
import { claimDataDir } from "../metadata/blank-disk.js";
import { ClusterView } from "../metadata/cluster-view.js";
import { ControllerClient } from "../metadata/controller-client.js";
import { startNodeMembership, type NodeMembership } from "../metadata/node-membership.js";
import type { ClusterMetadata } from "../metadata/types.js";
import { openRaftHost, ticksFromMs, type RaftHost } from "../raft-host/host.js";
import type { RaftHostLimits } from "../raft-host/limits.js";
import { NodeReadiness, type ReadinessGate } from "./node-readiness.js";
import type { GrpcServiceBinding, ServiceContext } from "./service.js";

/** Membership heartbeats: four Raft heartbeat intervals, at least this often. */
const MEMBERSHIP_HEARTBEAT_MS_MIN = 500;
/** Draining hands leaderships away for at most this long (and half the shutdown budget). */
const LEADERSHIP_TRANSFER_MS_MAX = 5_000;

export interface NodeRuntimeOptions {
  readonly role: ProcessRole;
  /** Raft host limits beyond the defaults (a broker's snapshot settings). */
  readonly raftLimits?: Partial<RaftHostLimits>;
  /**
   * Checks and claims a blank data directory before the Raft host opens; throws to refuse the
   * start. Default (brokers, coordinators): claimDataDir against the controllers' metadata.
   */
  readonly claimDataDir?: (controller: ControllerClient) => Promise<void>;
  /** Raft peers known at start (the controller quorum's configured addresses). */
  readonly raftPeers?: ReadonlyMap<number, string>;
}

export interface JoinOptions {
  /** Applies a new view to the role's parts; readiness is re-checked when it settles. */
  readonly onMetadata: (metadata: ClusterMetadata) => Promise<unknown>;
  /** The role's own readiness condition beyond registration and metadata. */
  readonly gate?: ReadinessGate;
}

export class NodeRuntime {
  /** The latest metadata of the controllers' watch (brokers and coordinators). */
  readonly view = new ClusterView();
  /** This node's advertised gRPC address, "host:port". */
  readonly address: string;
  private readonly raftService: GrpcServiceBinding;
  private readiness: NodeReadiness | undefined;
  private membership: NodeMembership | undefined;
  private unwatch: (() => void) | undefined;

  private constructor(
    private readonly ctx: ServiceContext,
    readonly host: RaftHost,
    readonly controller: ControllerClient,
  ) {
    const { advertise } = ctx.config;
    this.address = `${advertise.host}:${advertise.port}`;
    // Peers must reach the Raft transport before compose() returns (or while it waits for an election).
    this.raftService = host.grpcService();
    ctx.addService?.(this.raftService);
  }

  /** Claims the data directory, then opens the Raft host; a refused claim closes what it opened. */
  static async open(ctx: ServiceContext, options: NodeRuntimeOptions): Promise<NodeRuntime> {
    const { config, logger } = ctx;
    const role = options.role;
    const controller = new ControllerClient({
      transport: ctx.runtime.transport,
      controllers: config.controllers,
      logger: logger.child({ component: "controller-client" }),
      clock: ctx.runtime.clock,
      random: ctx.runtime.random,
      ...(role === "controller" ? {} : { watchingNode: { nodeId: config.nodeId, role } }),
    });
    let host: RaftHost;
    try {
      // A blank data directory must not rejoin Raft groups it is listed in (lost disk).
      if (options.claimDataDir !== undefined) await options.claimDataDir(controller);
      else if (role !== "controller") await claimBrokerOrCoordinatorDir(ctx, role);
      host = await openRaftHost({
        nodeId: config.nodeId,
        dataDir: config.dataDir,
        logger: logger.child({ component: "raft-host" }),
        ...ticksFromMs(config),
        ...(options.raftLimits === undefined ? {} : { limits: options.raftLimits }),
        ...(options.raftPeers === undefined ? {} : { peerAddresses: options.raftPeers }),
        // The service's registry: what its /metrics endpoint serves.
        metrics: ctx.metrics,
      });
    } catch (e) {
      controller.close();
      throw e;
    }
    return new NodeRuntime(ctx, host, controller);
  }

  /**
   * Brokers and coordinators: follows the controllers' metadata into the view (then the role's
   * parts), keeps this node registered, and reports readiness as both progress.
   */
  join(options: JoinOptions): void {
    const { config, logger } = this.ctx;
    const role = config.role;
    if (role === "controller") throw new Error("a controller is the quorum: it does not join it");
    if (this.readiness !== undefined) throw new Error("the node has joined already");
    const readiness = new NodeReadiness({
      role,
      nodeId: config.nodeId,
      view: this.view,
      setReady: (ready) => this.ctx.setReady(ready),
      ...(options.gate === undefined ? {} : { gate: options.gate }),
    });
    this.readiness = readiness;
    this.unwatch = this.controller.watchMetadata((m) => {
      this.view.update(m);
      void options.onMetadata(m).then(readiness.refresh);
    });
    this.membership = startNodeMembership({
      client: this.controller,
      nodeId: config.nodeId,
      role,
      address: this.address,
      rack: config.rack,
      logger,
      dataDir: config.dataDir,
      kafkaAddress: config.kafkaAdvertise
        ? `${config.kafkaAdvertise.host}:${config.kafkaAdvertise.port}`
        : undefined,
      heartbeatIntervalMs: Math.max(MEMBERSHIP_HEARTBEAT_MS_MIN, config.heartbeatIntervalMs * 4),
      onRegistered: (registered) => readiness.setRegistered(registered),
      scheduler: this.ctx.runtime.clock,
      random: this.ctx.runtime.random,
    });
  }

  /** The services compose() returns: the role's, after the Raft transport unless it is registered already. */
  services(role: readonly GrpcServiceBinding[]): GrpcServiceBinding[] {
    return this.ctx.addService ? [...role] : [this.raftService, ...role];
  }

  /** Not ready, then this node's Raft leaderships handed to peers (bounded). */
  async drain(): Promise<void> {
    if (this.readiness !== undefined) this.readiness.drop();
    else this.ctx.setReady(false);
    const { shutdownTimeoutMs } = this.ctx.config;
    await this.host.transferAllLeaderships(
      Math.min(LEADERSHIP_TRANSFER_MS_MAX, Math.floor(shutdownTimeoutMs / 2)),
    );
  }

  /** Stops heartbeating and following metadata: the role's parts close after this. */
  leave(): void {
    this.membership?.stop();
    this.unwatch?.();
  }

  /** Closes the controller client and the Raft host: the last step of a process's close. */
  async close(): Promise<void> {
    this.leave();
    this.controller.close();
    await this.host.close();
  }
}

/**
 * The blank-disk check of a broker or coordinator, on a client of its own: the node's client
 * starts its metadata watch at the first controller listed, as it did before any call moved
 * it (the check's calls follow leader hints).
 */
async function claimBrokerOrCoordinatorDir(
  ctx: ServiceContext,
  role: "broker" | "coordinator",
): Promise<void> {
  const client = new ControllerClient({
    transport: ctx.runtime.transport,
    controllers: ctx.config.controllers,
    logger: ctx.logger.child({ component: "blank-disk-check" }),
    clock: ctx.runtime.clock,
    random: ctx.runtime.random,
  });
  try {
    await claimDataDir(ctx, role, () => client.metadata({ linearizable: true }));
  } finally {
    client.close();
  }
}

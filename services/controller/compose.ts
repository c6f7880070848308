// The controller process's parts: the raft host with the __controller group (voters: the
// --controllers ids at first start), the Controller service, the leader's liveness loop and
// the metadata watch publisher. Ready once the group has a leader and this node applied up to
// the commit index it saw then.
import type * as grpc from "@grpc/grpc-js";
import type { TimerHandle } from "../../libs/runtime/scheduler.js";
import { LeaderStampClock } from "./leader-stamp-clock.js";
import type { RaftGroup } from "../../libs/raft-host/api.js";
import { openRaftHost, type RaftHost, ticksFromMs } from "../../libs/raft-host/host.js";
import type {
  GrpcServiceBinding,
  ServiceContext,
  ServiceParts,
} from "../../libs/server/service.js";
import { controllerProto } from "../../libs/metadata/controller-proto.js";
import { CONTROLLER_GROUP_ID } from "../../libs/metadata/types.js";
import { ControllerClient } from "../../libs/metadata/controller-client.js";
import { StartupError } from "../../libs/server/startup-error.js";
import { checkBlankControllerRejoin, recordDirectoryInBackground } from "./controller-directory.js";
import { registerControllerMetrics } from "./controller-metrics.js";
import { ControllerService } from "./controller-service.js";
import { loadControllerSettings } from "./controller-settings.js";
import { LeaderForwarder } from "./leader-forwarder.js";
import { LivenessMonitor } from "./liveness-monitor.js";
import { MetadataPublisher } from "./metadata-publisher.js";
import { MetadataStateMachine } from "./metadata-state-machine.js";
import { controllerSecurityView } from "./controller-security-view.js";
import { processCredentials } from "../../libs/server/tls/credentials.js";

const READINESS_CHECK_MS = 100;
/** Readiness drops after this many election timeouts without a known leader. */
const LEADERLESS_ELECTIONS_MAX = 3;

async function openHost(ctx: ServiceContext): Promise<RaftHost> {
  const { config } = ctx;
  return openRaftHost({
    nodeId: config.nodeId,
    dataDir: config.dataDir,
    logger: ctx.logger.child({ component: "raft-host" }),
    ...ticksFromMs(config),
    // The service's registry: what its /metrics endpoint serves.
    metrics: ctx.metrics,
  });
}

export async function compose(ctx: ServiceContext): Promise<ServiceParts> {
  const { config, logger } = ctx;
  const { clock } = ctx.runtime;
  const settings = loadControllerSettings();
  const client = new ControllerClient({
    channelCredentials: processCredentials(),
    controllers: config.controllers,
    logger: logger.child({ component: "controller-client" }),
  });
  try {
    await claimControllerDataDir(ctx, client);
  } catch (e) {
    client.close();
    throw e;
  }
  const host = await openHost(ctx);
  for (const peer of config.controllers) {
    if (peer.id !== config.nodeId) host.setPeerAddress(peer.id, `${peer.host}:${peer.port}`);
  }
  // Peers must reach our Raft transport while we wait for the group to come up.
  const raftService = host.grpcService();
  ctx.addService?.(raftService);
  const sm = new MetadataStateMachine();
  ctx.setSecurityView?.(controllerSecurityView(sm));
  const group = await host.openGroup({
    groupId: CONTROLLER_GROUP_ID,
    initialVoters: config.controllers.map((c) => c.id),
    stateMachine: sm,
  });
  let service: ControllerService | undefined;
  const forwarder = new LeaderForwarder(
    () => service?.controllerList() ?? config.controllers,
    config.nodeId,
  );
  // Peer addresses follow the replicated quorum (AddController / RemoveController).
  const peerAddresses = new Map<number, string>();
  const updatePeers = (): void => {
    for (const peer of service?.controllerList() ?? []) {
      const address = `${peer.host}:${peer.port}`;
      if (peer.id === config.nodeId || peerAddresses.get(peer.id) === address) continue;
      peerAddresses.set(peer.id, address);
      host.setPeerAddress(peer.id, address);
    }
  };
  const publisher = new MetadataPublisher({
    view: (secrets) => service!.wireView(secrets),
    keepaliveMs: settings.watchKeepaliveMs,
    subscribersMax: settings.watchSubscribersMax,
    logger,
    scheduler: clock,
  });
  // Leases and re-placement run on stamps that no wall-clock step moves (leader-stamp-clock.ts).
  const stampClock = new LeaderStampClock(clock, group, () => sm.nowMs());
  service = new ControllerService({
    nodeId: config.nodeId,
    group,
    sm,
    controllers: config.controllers,
    forwarder,
    publisher,
    settings,
    clock: stampClock,
    logger,
    onControllersChanged: updatePeers,
    tls: ctx.tls !== undefined,
  });
  updatePeers();
  const unsubscribeChanges = sm.onChange(() => {
    updatePeers();
    publisher.changed();
  });
  const unsubscribeLeader = host.onLeaderChange((c) => {
    if (c.groupId !== CONTROLLER_GROUP_ID) return;
    logger.info({ leader: c.leader, term: c.term }, "controller leader changed");
    publisher.changed();
  });
  registerControllerMetrics(ctx.metrics, group, sm, publisher);
  const monitor = new LivenessMonitor(group, sm, settings, stampClock, clock, logger);
  const readiness = watchReadiness(ctx, group, config.electionTimeoutMs);
  const stopRecorder =
    ctx.dataDir === undefined
      ? () => undefined
      : recordDirectoryInBackground({
          nodeId: config.nodeId,
          directoryId: ctx.dataDir.directoryId,
          logger,
          recorded: () => sm.controllerDirectory(config.nodeId),
          record: () => client.recordControllerDirectory(config.nodeId, ctx.dataDir!.directoryId),
          scheduler: clock,
        });
  const definition = controllerProto().definition as grpc.ServiceDefinition;
  const services: GrpcServiceBinding[] = [{ definition, implementation: service.implementation() }];
  if (!ctx.addService) services.unshift(raftService);
  return {
    services,
    drain: async () => {
      ctx.setReady(false);
      await host.transferAllLeaderships(Math.min(5_000, Math.floor(config.shutdownTimeoutMs / 2)));
      // Open watch streams would hold the server's graceful stop: end them, clients move on.
      publisher.close();
    },
    close: async () => {
      clock.clearInterval(readiness);
      stopRecorder();
      client.close();
      monitor.close();
      unsubscribeChanges();
      unsubscribeLeader();
      publisher.close();
      forwarder.close();
      await host.close();
    },
  };
}

/** A blank data directory is checked against the peers' record of the quorum (refusing with a StartupError), then claimed. */
async function claimControllerDataDir(
  ctx: ServiceContext,
  client: ControllerClient,
): Promise<void> {
  const dir = ctx.dataDir;
  if (dir === undefined) return;
  if (dir.blank) {
    const refusal = await checkBlankControllerRejoin({
      nodeId: ctx.config.nodeId,
      dataDir: dir.path,
      peers: ctx.config.controllers,
      logger: ctx.logger,
      describe: (peerId) => client.describeCluster(peerId),
      clock: ctx.runtime.clock,
    });
    if (refusal !== undefined) throw new StartupError(refusal);
    ctx.logger.info(
      { dataDir: dir.path, directoryId: dir.directoryId },
      "blank data directory claimed: no peer records this controller with a data directory",
    );
  }
  dir.claim();
}

/** Polls the group: ready once a leader is known and this node caught up with the commit index. */
function watchReadiness(
  ctx: ServiceContext,
  group: RaftGroup,
  electionTimeoutMs: number,
): TimerHandle {
  const { clock } = ctx.runtime;
  let ready = false;
  let leaderlessSinceMs: number | undefined;
  return clock.setInterval(() => {
    const status = group.status();
    const now = clock.monotonicMs();
    if (status.leader >= 0) {
      leaderlessSinceMs = undefined;
      if (!ready && status.applied >= status.commit) {
        ready = true;
        ctx.setReady(true);
        ctx.logger.info(
          { leader: status.leader, term: status.term, applied: status.applied },
          "controller ready",
        );
      }
      return;
    }
    leaderlessSinceMs ??= now;
    if (ready && now - leaderlessSinceMs > LEADERLESS_ELECTIONS_MAX * electionTimeoutMs) {
      ready = false;
      ctx.setReady(false);
      ctx.logger.warn("no controller leader for a while: not ready");
    }
  }, READINESS_CHECK_MS);
}

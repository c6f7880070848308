// The controller process's parts, over its node runtime (libs/server/node-runtime.ts: data
// directory, Raft host, controller client): the __controller group (voters: the --controllers
// ids at first start), the Controller service, the leader's liveness loop and the metadata
// watch publisher. Ready once the group has a leader and this node applied up to the commit
// index it saw then (controller-readiness.ts).
import type * as grpc from "@grpc/grpc-js";
import type { PeerAddress } from "../../libs/common/config.js";
import { LeaderStampClock } from "./leader-stamp-clock.js";
import type { ServiceContext, ServiceParts } from "../../libs/server/service.js";
import { NodeRuntime } from "../../libs/server/node-runtime.js";
import { controllerProto } from "../../libs/metadata/controller-proto.js";
import type {
  MetadataResponse,
  WatchMetadataResponse,
} from "../../libs/common/proto-types/index.js";
import { CONTROLLER_GROUP_ID } from "../../libs/metadata/types.js";
import type { ControllerClient } from "../../libs/metadata/controller-client.js";
import { StartupError } from "../../libs/server/startup-error.js";
import { checkBlankControllerRejoin, recordDirectoryInBackground } from "./controller-directory.js";
import { registerControllerMetrics } from "./controller-metrics.js";
import { ControllerReadiness } from "./controller-readiness.js";
import { ControllerService } from "./controller-service.js";
import { loadControllerSettings } from "./controller-settings.js";
import { LeaderForwarder } from "./leader-forwarder.js";
import { LivenessMonitor } from "./liveness-monitor.js";
import { MetadataPublisher } from "./metadata-publisher.js";
import { MetadataStateMachine } from "./metadata-state-machine.js";
import { controllerSecurityView } from "./controller-security-view.js";

export async function compose(ctx: ServiceContext): Promise<ServiceParts> {
  const { config, logger } = ctx;
  const { clock } = ctx.runtime;
  const settings = loadControllerSettings();
  const node = await NodeRuntime.open(ctx, {
    role: "controller",
    claimDataDir: (client) => claimControllerDataDir(ctx, client),
    raftPeers: new Map(
      config.controllers
        .filter((peer) => peer.id !== config.nodeId)
        .map((peer) => [peer.id, `${peer.host}:${peer.port}`]),
    ),
  });
  const { host, controller: client } = node;
  const sm = new MetadataStateMachine();
  ctx.setSecurityView?.(controllerSecurityView(sm));
  const group = await host.openGroup({
    groupId: CONTROLLER_GROUP_ID,
    initialVoters: config.controllers.map((c) => c.id),
    stateMachine: sm,
  });
  // The quorum's addresses: configuration plus the replicated AddController / RemoveController.
  const controllerList = (): PeerAddress[] => sm.controllers(config.controllers);
  const forwarder = new LeaderForwarder(ctx.runtime.transport, controllerList, config.nodeId);
  // Peer addresses follow the replicated quorum.
  const peerAddresses = new Map<number, string>();
  const updatePeers = (): void => {
    for (const peer of controllerList()) {
      const address = `${peer.host}:${peer.port}`;
      if (peer.id === config.nodeId || peerAddresses.get(peer.id) === address) continue;
      peerAddresses.set(peer.id, address);
      host.setPeerAddress(peer.id, address);
    }
  };
  const definition = withBytesPassedThrough(
    controllerProto().definition as grpc.ServiceDefinition,
    ["WatchMetadata", "Metadata"],
  );
  const watchSerialize = definition.WatchMetadata?.responseSerialize as
    ((m: WatchMetadataResponse) => Buffer) | undefined;
  const metadataSerialize = definition.Metadata?.responseSerialize as
    ((m: MetadataResponse) => Buffer) | undefined;
  const publisher = new MetadataPublisher({
    view: (secrets): ReturnType<ControllerService["wireView"]> => service.wireView(secrets),
    ...(watchSerialize ? { encode: watchSerialize } : {}),
    nowMs: () => clock.monotonicMs(),
    keepaliveMs: settings.watchKeepaliveMs,
    subscribersMax: settings.watchSubscribersMax,
    logger,
    scheduler: clock,
  });
  // Leases and re-placement run on stamps that no wall-clock step moves (leader-stamp-clock.ts).
  const stampClock = new LeaderStampClock(clock, group, () => sm.nowMs());
  const service = new ControllerService({
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
    ...(metadataSerialize ? { encodeMetadataResponse: metadataSerialize } : {}),
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
  const readiness = new ControllerReadiness({
    group,
    electionTimeoutMs: config.electionTimeoutMs,
    clock,
    logger,
    setReady: (ready) => ctx.setReady(ready),
  });
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
  return {
    services: node.services([{ definition, implementation: service.implementation() }]),
    drain: async () => {
      await node.drain();
      // Open watch streams would hold the server's graceful stop: end them, clients move on.
      publisher.close();
    },
    close: async () => {
      readiness.close();
      stopRecorder();
      monitor.close();
      unsubscribeChanges();
      unsubscribeLeader();
      publisher.close();
      await node.close();
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

/**
 * The Controller service with these methods' serializers passing bytes through: a view is
 * encoded once and those bytes answer every stream and request (metadata-publisher.ts,
 * ControllerService.metadataResponse).
 */
function withBytesPassedThrough(
  definition: grpc.ServiceDefinition,
  methods: readonly string[],
): grpc.ServiceDefinition {
  const out: Record<string, grpc.MethodDefinition<unknown, unknown>> = { ...definition };
  for (const name of methods) {
    const method = definition[name];
    if (method === undefined) continue;
    const serialize = method.responseSerialize as (m: unknown) => Buffer;
    out[name] = {
      ...method,
      responseSerialize: (m: unknown) => (Buffer.isBuffer(m) ? m : serialize(m)),
    };
  }
  return out;
}

// Prometheus gauges of the controller, computed at scrape time from the applied state.
import { Gauge, type Registry } from "prom-client";
import type { RaftGroup } from "../../libs/raft-host/api.js";
import type { MetadataPublisher } from "./metadata-publisher.js";
import type { MetadataStateMachine } from "./metadata-state-machine.js";
import { countOffline } from "../../libs/metadata/partition-health.js";
import { imbalanceRatio, preferredCounts } from "../../libs/raft-host/leader-balance.js";

export function registerControllerMetrics(
  registry: Registry,
  group: RaftGroup,
  sm: MetadataStateMachine,
  publisher: MetadataPublisher,
): void {
  const gauge = (
    name: string,
    help: string,
    collect: (g: Gauge<string>) => void,
    labelNames: string[] = [],
  ): void => {
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      collect(this: Gauge<string>) {
        collect(this);
      },
    });
  };
  gauge("tern_controller_is_leader", "1 when this controller leads the __controller group.", (g) =>
    g.set(group.isLeader() ? 1 : 0),
  );
  gauge("tern_controller_metadata_version", "Version of the metadata applied here.", (g) =>
    g.set(Number(sm.version())),
  );
  gauge(
    "tern_controller_next_producer_id",
    "First producer id of the next block to hand out.",
    (g) => g.set(Number(sm.nextProducerId())),
  );
  gauge(
    "tern_controller_watch_subscribers",
    "Open WatchMetadata streams on this controller.",
    (g) => g.set(publisher.subscriberCount()),
  );
  gauge(
    "tern_controller_watch_client_subscribers",
    "Open WatchMetadata streams of clients (bounded by TERN_WATCH_SUBSCRIBERS_MAX; brokers and coordinators have slots of their own).",
    (g) => g.set(publisher.clientSubscriberCount()),
  );
  gauge(
    "tern_controller_nodes",
    "Registered nodes by role and liveness.",
    (g) => {
      g.reset();
      for (const n of sm.metadata().nodes)
        g.inc({ role: n.role, state: n.alive ? "alive" : "dead" });
    },
    ["role", "state"],
  );
  gauge(
    "tern_controller_leader_imbalance_ratio",
    "Per node: share of the partitions it is the preferred leader of (first replica) that another node leads (Kafka's leader imbalance; nodes hand leaderships back above 0.1: libs/raft-host/leader-balance.ts).",
    (g) => {
      g.reset();
      for (const role of ["broker", "coordinator"] as const) {
        const partitions = sm
          .metadata()
          .topics.filter((t) => t.role === role)
          .flatMap((t) => t.partitions);
        for (const [node, c] of preferredCounts(partitions))
          g.set({ role, node_id: String(node) }, imbalanceRatio(c));
      }
    },
    ["role", "node_id"],
  );
  gauge("tern_controller_topics", "Topics, internal ones included.", (g) =>
    g.set(sm.metadata().topics.length),
  );
  // Every controller reports its applied view; alert on max() across them (docs/operations.md).
  gauge(
    "tern_controller_offline_partitions",
    "Partitions (Raft groups) with no live leader or no live majority of replicas, by topic role (libs/metadata/partition-health.ts).",
    (g) => {
      const { byRole } = countOffline(sm.metadata());
      g.set({ topic_role: "broker" }, byRole.broker);
      g.set({ topic_role: "coordinator" }, byRole.coordinator);
    },
    ["topic_role"],
  );
  gauge(
    "tern_controller_under_replicated_partitions",
    "Partitions with a replica on a dead or unknown node (lagging live replicas: tern_raft_under_replicated_groups on the leaders).",
    (g) => {
      const m = sm.metadata();
      const alive = new Set(m.nodes.filter((n) => n.alive).map((n) => `${n.role}:${n.nodeId}`));
      let count = 0;
      for (const t of m.topics)
        for (const p of t.partitions)
          if (p.replicas.some((id) => !alive.has(`${t.role}:${id}`))) count += 1;
      g.set(count);
    },
  );
}

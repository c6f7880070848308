// Which partitions (Raft groups) are offline, judged from cluster metadata alone: the one rule
// behind tern_controller_offline_partitions and `tern cluster status`. A partition is offline
// when it has no leader that metadata shows alive, or when fewer than a majority of its
// replicas are alive: such a group cannot commit (and cannot elect) whatever metadata says
// about its last leader, so Kafka's "no leader" and Raft's "no quorum" are one condition here.
import type { ClusterMetadata, NodeInfo, Role } from "./types.js";

export interface GroupView {
  readonly role: Role;
  readonly replicas: readonly number[];
  /** -1 unknown. */
  readonly leader: number;
}

export type OfflineReason = "no-leader" | "leader-dead" | "no-quorum";

/** Live node ids per role. */
export function liveNodeIds(
  nodes: readonly Pick<NodeInfo, "role" | "nodeId" | "alive">[],
): Record<Role, Set<number>> {
  const out: Record<Role, Set<number>> = { broker: new Set(), coordinator: new Set() };
  for (const n of nodes) if (n.alive) out[n.role].add(n.nodeId);
  return out;
}

/** Why a group is offline, or undefined when it has a live leader and a live majority. */
export function offlineReason(
  group: GroupView,
  live: Record<Role, Set<number>>,
): OfflineReason | undefined {
  const alive = live[group.role];
  const aliveReplicas = group.replicas.filter((id) => alive.has(id)).length;
  if (group.replicas.length > 0 && aliveReplicas * 2 <= group.replicas.length) return "no-quorum";
  if (group.leader < 0) return "no-leader";
  if (!alive.has(group.leader)) return "leader-dead";
  return undefined;
}

/** Offline partitions per topic role, internal topics included. */
export function countOffline(m: Pick<ClusterMetadata, "nodes" | "topics">): {
  total: number;
  byRole: Record<Role, number>;
} {
  const live = liveNodeIds(m.nodes);
  const byRole: Record<Role, number> = { broker: 0, coordinator: 0 };
  for (const t of m.topics) {
    for (const p of t.partitions)
      if (
        offlineReason({ role: t.role, replicas: p.replicas, leader: p.leader }, live) !== undefined
      )
        byRole[t.role] += 1;
  }
  return { total: byRole.broker + byRole.coordinator, byRole };
}

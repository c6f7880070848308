// What `tern cluster status` calls healthy, as rpk cluster health does: a controller leader,
// every controller and every live node SERVING, and no offline (leaderless or quorum-less)
// group, internal topics included. Pure, so the rule is tested apart from the cluster.
import type { ClusterDescription, GroupLeader } from "../../libs/client/index.js";

export interface ClusterHealth {
  readonly healthy: boolean;
  /** One short line per problem, most important first. */
  readonly reasons: string[];
  readonly offline: GroupLeader[];
}

export function judgeClusterHealth(
  d: Pick<ClusterDescription, "controllerLeader" | "controllers" | "nodes" | "groups">,
): ClusterHealth {
  const reasons: string[] = [];
  if (d.controllerLeader < 0) reasons.push("no controller leader");
  for (const c of d.controllers)
    if (c.health !== "SERVING") reasons.push(`controller ${c.nodeId} is ${c.health}`);
  for (const n of d.nodes)
    if (n.alive && n.health !== "SERVING") reasons.push(`${n.role} ${n.nodeId} is ${n.health}`);
  // User topics first: those are what people look for in a long list.
  const offline = d.groups
    .filter((g) => g.offline !== undefined)
    .sort((a, b) => Number(a.topic.startsWith("__")) - Number(b.topic.startsWith("__")));
  if (offline.length > 0)
    reasons.push(
      `${offline.length} offline partition${offline.length === 1 ? "" : "s"} (no live leader or no live majority)`,
    );
  return { healthy: reasons.length === 0, reasons, offline };
}

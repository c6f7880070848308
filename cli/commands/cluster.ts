// tern cluster status: controllers (quorum, health), brokers and coordinators (alive, health),
// and the Raft leader of every group (topic partitions and the internal topics).
import type { Command } from "commander";
import { Admin } from "../../libs/client/index.js";
import { EXIT_CLUSTER_ERROR, printJson, printTable } from "../output.js";
import { globals } from "./context.js";

export function registerCluster(program: Command): void {
  const cluster = program.command("cluster").description("cluster status");
  cluster.command("status").description("nodes, roles, health, Raft leaders per group")
    .option("--groups <filter>", "which groups to list: all, user (non-internal) or none", "user")
    .action(async (o: { groups: string }, cmd: Command) => {
      const g = globals(cmd);
      const admin = new Admin({ bootstrap: g.bootstrap });
      try {
        const d = await admin.describeCluster();
        const healthy = d.controllers.every((c) => c.health === "SERVING") && d.nodes.filter((n) => n.alive).every((n) => n.health === "SERVING");
        const groups = o.groups === "none" ? [] : o.groups === "all" ? d.groups : d.groups.filter((x) => !x.topic.startsWith("__"));
        if (g.json) return printJson({ healthy, ...d, groups });
        process.stdout.write(`metadata version ${d.metadataVersion}, controller leader ${d.controllerLeader}, ${healthy ? "healthy" : "NOT healthy"}\n\n`);
        printTable(["ROLE", "ID", "ADDRESS", "ALIVE", "HEALTH", "RAFT"], [
          ...d.controllers.map((c) => ["controller", c.nodeId, c.address, c.health !== "unreachable", c.health,
            c.quorum ? `${c.quorum.leader === c.nodeId ? "leader" : "follower"} term=${c.quorum.term} commit=${c.quorum.commitIndex} applied=${c.quorum.appliedIndex}` : (c.error ?? "")]),
          ...d.nodes.map((n) => [n.role, n.nodeId, n.address, n.alive, n.health, ""]),
        ]);
        const leader = d.controllers.find((c) => c.quorum && c.quorum.leader === c.nodeId)?.quorum;
        if (leader) {
          process.stdout.write("\n");
          printTable(["CONTROLLER", "VOTER", "MATCH_INDEX", "LAG", "RECENT_ACTIVE"], leader.voters.map((v) => [v.nodeId, v.voter, v.matchIndex, leader.commitIndex - v.matchIndex, v.recentActive]));
        }
        if (groups.length > 0) {
          process.stdout.write("\n");
          printTable(["GROUP", "LEADER", "TERM", "REPLICAS"], groups.map((x) => [`${x.topic}-${x.partition}`, x.leader, x.leaderTerm, x.replicas.join(",")]));
        }
        if (!healthy) process.exitCode = EXIT_CLUSTER_ERROR;
      } finally {
        await admin.close();
      }
    });
}

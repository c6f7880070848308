// tern cluster status: controllers (quorum, health), brokers and coordinators (alive, health),
// the Raft leader of every group and the offline ones. --watch repeats it; --exit-when-healthy
// waits (bounded by --timeout-ms) until the cluster is healthy, for rolling restarts and scripts.
import type { Command } from "commander";
import { Admin, type ClusterDescription } from "../../libs/client/index.js";
import {
  EXIT_CLUSTER_ERROR,
  EXIT_OK,
  parseIntArg,
  printJson,
  printTable,
  UsageError,
} from "../output.js";
import { judgeClusterHealth, type ClusterHealth } from "./cluster-health.js";
import { globals, withAdmin, type GlobalOptions } from "./context.js";

const OFFLINE_ROWS_MAX = 50;
const INTERVAL_MS_MIN = 100;
/** --exit-when-healthy waits this long unless --timeout-ms says otherwise. */
const EXIT_WHEN_HEALTHY_TIMEOUT_MS_DEFAULT = 300_000;

interface StatusOptions {
  groups: string;
  watch?: boolean;
  exitWhenHealthy?: boolean;
  intervalMs: string;
  timeoutMs?: string;
}

export function registerCluster(program: Command): void {
  const cluster = program.command("cluster").description("cluster status");
  cluster
    .command("status")
    .description("nodes, roles, health, Raft leaders per group; exit 0 only when healthy")
    .option("--groups <filter>", "which groups to list: all, user (non-internal) or none", "user")
    .option(
      "-w, --watch",
      "print the status again every --interval-ms until interrupted (or healthy, with --exit-when-healthy)",
    )
    .option(
      "-e, --exit-when-healthy",
      "poll until the cluster is healthy, then exit 0 (exit 1 after --timeout-ms)",
    )
    .option("--interval-ms <ms>", "polling interval of --watch / --exit-when-healthy", "2000")
    .option(
      "--timeout-ms <ms>",
      `bound on --watch / --exit-when-healthy (default: none for --watch, ${EXIT_WHEN_HEALTHY_TIMEOUT_MS_DEFAULT} with --exit-when-healthy)`,
    )
    .action(async (o: StatusOptions, cmd: Command) => {
      const g = globals(cmd);
      if (!["all", "user", "none"].includes(o.groups))
        throw new UsageError(`--groups must be all, user or none, got "${o.groups}"`);
      const intervalMs = parseIntArg(o.intervalMs, "--interval-ms", INTERVAL_MS_MIN);
      const timeoutMs =
        o.timeoutMs !== undefined
          ? parseIntArg(o.timeoutMs, "--timeout-ms", 1)
          : o.exitWhenHealthy
            ? EXIT_WHEN_HEALTHY_TIMEOUT_MS_DEFAULT
            : undefined;
      await withAdmin(g, async (admin) => {
        if (!o.watch && !o.exitWhenHealthy) {
          const health = await showOnce(admin, g, o.groups);
          if (!health.healthy) process.exitCode = EXIT_CLUSTER_ERROR;
          return;
        }
        process.exitCode = await poll(admin, g, o, intervalMs, timeoutMs);
      });
    });
}

/** Repeats the status until healthy (with --exit-when-healthy), the timeout, or forever. */
async function poll(
  admin: Admin,
  g: GlobalOptions,
  o: StatusOptions,
  intervalMs: number,
  timeoutMs: number | undefined,
): Promise<number> {
  const deadline = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs;
  for (let round = 0; ; round++) {
    let health: ClusterHealth | undefined;
    if (round > 0 && o.watch && !g.json)
      process.stdout.write(`\n--- ${new Date().toISOString()}\n`);
    try {
      // Without --watch only the final state prints (stdout), and why it is not healthy when
      // the wait runs out (stderr): a script's first command after `kubectl apply`.
      health = o.watch
        ? await showOnce(admin, g, o.groups)
        : judgeClusterHealth(await admin.describeCluster());
    } catch (e) {
      process.stderr.write(`cluster status: ${String((e as Error)?.message ?? e)}\n`);
    }
    if (health?.healthy && o.exitWhenHealthy) {
      if (!o.watch) await showOnce(admin, g, o.groups);
      return EXIT_OK;
    }
    if (Date.now() + intervalMs > deadline) {
      if (o.exitWhenHealthy && !o.watch) await showOnce(admin, g, o.groups).catch(() => undefined);
      if (o.exitWhenHealthy)
        process.stderr.write(
          `cluster not healthy after ${timeoutMs} ms${health ? `: ${health.reasons.join("; ")}` : ""}\n`,
        );
      return health?.healthy ? EXIT_OK : EXIT_CLUSTER_ERROR;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

async function showOnce(admin: Admin, g: GlobalOptions, filter: string): Promise<ClusterHealth> {
  const d = await admin.describeCluster();
  const health = judgeClusterHealth(d);
  const groups =
    filter === "none"
      ? []
      : filter === "all"
        ? d.groups
        : d.groups.filter((x) => !x.topic.startsWith("__"));
  if (g.json) {
    printJson({
      healthy: health.healthy,
      unhealthyReasons: health.reasons,
      offlinePartitions: health.offline.map((x) => ({
        topic: x.topic,
        partition: x.partition,
        reason: x.offline,
      })),
      ...d,
      groups,
    });
    return health;
  }
  printHuman(d, health, groups);
  return health;
}

function printHuman(
  d: ClusterDescription,
  health: ClusterHealth,
  groups: ClusterDescription["groups"],
): void {
  process.stdout.write(
    `metadata version ${d.metadataVersion}, controller leader ${d.controllerLeader}, ${health.healthy ? "healthy" : `NOT healthy: ${health.reasons.join("; ")}`}\n\n`,
  );
  printTable(
    ["ROLE", "ID", "ADDRESS", "ALIVE", "HEALTH", "RAFT"],
    [
      ...d.controllers.map((c) => [
        "controller",
        c.nodeId,
        c.address,
        c.health !== "unreachable",
        c.health,
        c.quorum
          ? `${c.quorum.leader === c.nodeId ? "leader" : "follower"} term=${c.quorum.term} commit=${c.quorum.commitIndex} applied=${c.quorum.appliedIndex}`
          : (c.error ?? ""),
      ]),
      ...d.nodes.map((n) => [n.role, n.nodeId, n.address, n.alive, n.health, ""]),
    ],
  );
  const leader = d.controllers.find((c) => c.quorum && c.quorum.leader === c.nodeId)?.quorum;
  if (leader) {
    process.stdout.write("\n");
    printTable(
      ["CONTROLLER", "VOTER", "MATCH_INDEX", "LAG", "RECENT_ACTIVE"],
      leader.voters.map((v) => [
        v.nodeId,
        v.voter,
        v.matchIndex,
        leader.commitIndex - v.matchIndex,
        v.recentActive,
      ]),
    );
  }
  if (health.offline.length > 0) {
    process.stdout.write(
      `\nOFFLINE PARTITIONS (${health.offline.length}${health.offline.length > OFFLINE_ROWS_MAX ? `, first ${OFFLINE_ROWS_MAX}` : ""})\n`,
    );
    printTable(
      ["GROUP", "REASON", "LEADER", "REPLICAS"],
      health.offline
        .slice(0, OFFLINE_ROWS_MAX)
        .map((x) => [`${x.topic}-${x.partition}`, x.offline, x.leader, x.replicas.join(",")]),
    );
  }
  if (groups.length > 0) {
    process.stdout.write("\n");
    printTable(
      ["GROUP", "LEADER", "TERM", "REPLICAS", "STATE"],
      groups.map((x) => [
        `${x.topic}-${x.partition}`,
        x.leader,
        x.leaderTerm,
        x.replicas.join(","),
        x.offline ? `offline (${x.offline})` : "online",
      ]),
    );
  }
}

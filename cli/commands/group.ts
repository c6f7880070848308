// tern group list|describe|delete|delete-offsets|reset-offsets (kafka-consumer-groups.sh, rpk group).
import type { Command } from "commander";
import { Admin, type ResetSpec, type TopicPartition } from "../../libs/client/index.js";
import {
  EXIT_CLUSTER_ERROR,
  parseBigIntArg,
  printJson,
  printTable,
  UsageError,
} from "../output.js";
import { globals, withAdmin } from "./context.js";

const names = (tps: readonly TopicPartition[]): string =>
  tps.map((p) => `${p.topic}-${p.partition}`).join(",");

/** "--topic T" (every partition) or "--topic T:0,2"; repeatable. */
async function partitionsOf(admin: Admin, specs: readonly string[]): Promise<TopicPartition[]> {
  const out: TopicPartition[] = [];
  for (const spec of specs) {
    const [topic, list] = spec.split(":");
    if (!topic) throw new UsageError(`--topic ${spec}: expected TOPIC or TOPIC:P,P`);
    if (list !== undefined) {
      for (const p of list.split(",")) {
        if (!/^\d+$/.test(p))
          throw new UsageError(`--topic ${spec}: ${p} is not a partition number`);
        out.push({ topic, partition: Number(p) });
      }
      continue;
    }
    const [d] = await admin.describeTopics([topic]);
    if (d?.error) throw d.error;
    for (const p of d!.topic!.partitions) out.push({ topic, partition: p.partition });
  }
  return out;
}

function resetSpec(o: ResetOptions): ResetSpec {
  const chosen = [o.toEarliest, o.toLatest, o.toOffset, o.toDatetime, o.shiftBy].filter(
    (x) => x !== undefined && x !== false,
  );
  if (chosen.length !== 1)
    throw new UsageError(
      "choose exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime, --shift-by",
    );
  if (o.toEarliest) return { to: "earliest" };
  if (o.toLatest) return { to: "latest" };
  if (o.toOffset !== undefined)
    return { to: "offset", offset: parseBigIntArg(o.toOffset, "--to-offset") };
  if (o.toDatetime !== undefined) {
    const ms = /^\d+$/.test(o.toDatetime) ? Number(o.toDatetime) : Date.parse(o.toDatetime);
    if (!Number.isFinite(ms))
      throw new UsageError(
        `--to-datetime: ${o.toDatetime} is neither an ISO-8601 time nor epoch milliseconds`,
      );
    return { to: "timestamp", timestampMs: ms };
  }
  return { to: "shift", by: parseBigIntArg(o.shiftBy!, "--shift-by") };
}

interface ResetOptions {
  topic: string[];
  toEarliest?: boolean;
  toLatest?: boolean;
  toOffset?: string;
  toDatetime?: string;
  shiftBy?: string;
  execute?: boolean;
}

export function registerGroup(program: Command): void {
  const group = program
    .command("group")
    .description("consumer groups: list, describe with lag, delete, reset offsets");

  group
    .command("list")
    .description("every group of every broker")
    .action((_o: unknown, cmd: Command) =>
      withAdmin(globals(cmd), async (admin, json) => {
        const r = await admin.listGroups();
        if (json) printJson(r);
        else
          printTable(
            ["GROUP", "TYPE", "STATE", "MEMBERS"],
            r.groups.map((g) => [g.groupId, g.type, g.state, g.members]),
          );
        if (r.unreachableBrokers.length > 0) {
          process.stderr.write(
            `unreachable brokers (their groups are missing): ${r.unreachableBrokers.join(",")}\n`,
          );
          process.exitCode = EXIT_CLUSTER_ERROR;
        }
      }),
    );

  group
    .command("describe <group>")
    .description(
      "state, members, assignments, and per partition committed offset, log end offset and lag",
    )
    .action((groupId: string, _o: unknown, cmd: Command) =>
      withAdmin(globals(cmd), async (admin, json) => {
        const d = await admin.describeGroup(groupId);
        if (json) return printJson(d);
        process.stdout.write(
          `group ${d.groupId} (${d.type}): ${d.state}, epoch ${d.groupEpoch}, assignor ${d.assignor || "-"}, coordinator broker ${d.coordinator}, ${d.members.length} members, total lag ${d.totalLag}\n\n`,
        );
        printTable(
          [
            "TOPIC",
            "PARTITION",
            "CURRENT-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
            "MEMBER-ID",
            "HOST",
            "CLIENT-ID",
          ],
          d.partitions.map((p) => [
            p.topic,
            p.partition,
            p.committed ?? "-",
            p.logEndOffset ?? "?",
            p.lag ?? "?",
            p.memberId || "-",
            p.clientHost || "-",
            p.clientId || "-",
          ]),
        );
        if (d.members.length > 0) {
          process.stdout.write("\n");
          printTable(
            [
              "MEMBER-ID",
              "INSTANCE-ID",
              "CLIENT-ID",
              "HOST",
              "EPOCH",
              "STATE",
              "ASSIGNMENT",
              "REVOKING",
            ],
            d.members.map((m) => [
              m.memberId,
              m.instanceId || "-",
              m.clientId,
              m.clientHost,
              m.memberEpoch,
              m.state,
              names(m.assignment),
              names(m.pendingRevocation),
            ]),
          );
        }
      }),
    );

  group
    .command("delete <group>")
    .description("delete an empty group and its committed offsets")
    .action((groupId: string, _o: unknown, cmd: Command) =>
      withAdmin(globals(cmd), async (admin, json) => {
        await admin.deleteGroup(groupId);
        if (json) printJson({ deleted: groupId });
        else process.stdout.write(`deleted group ${groupId}\n`);
      }),
    );

  group
    .command("delete-offsets <group>")
    .description("delete a group's committed offsets of topics no member is subscribed to")
    .requiredOption("--topic <topic...>", "TOPIC (every partition) or TOPIC:P,P")
    .action((groupId: string, o: { topic: string[] }, cmd: Command) =>
      withAdmin(globals(cmd), async (admin, json) => {
        const r = await admin.deleteGroupOffsets(groupId, await partitionsOf(admin, o.topic));
        if (json) printJson(r);
        else
          printTable(
            ["TOPIC", "PARTITION", "RESULT"],
            r.map((p) => [p.topic, p.partition, p.error === "NONE" ? "deleted" : p.error]),
          );
        if (r.some((p) => p.error !== "NONE")) process.exitCode = EXIT_CLUSTER_ERROR;
      }),
    );

  group
    .command("reset-offsets <group>")
    .description("new committed offsets for an empty group (a dry run unless --execute)")
    .requiredOption("--topic <topic...>", "TOPIC (every partition) or TOPIC:P,P")
    .option("--to-earliest", "the log start offset")
    .option("--to-latest", "the log end offset")
    .option("--to-offset <n>", "this offset (clamped to the partition's range)")
    .option("--to-datetime <time>", "the first offset at or after this time (ISO-8601 or epoch ms)")
    .option("--shift-by <n>", "the committed offset plus N (negative: back)")
    .option("--execute", "apply the plan (default: print it only)")
    .action((groupId: string, o: ResetOptions, cmd: Command) =>
      withAdmin(globals(cmd), async (admin, json) => {
        const spec = resetSpec(o);
        const plan = await admin.resetGroupOffsets(
          groupId,
          await partitionsOf(admin, o.topic),
          spec,
          Boolean(o.execute),
        );
        if (json) printJson({ executed: Boolean(o.execute), partitions: plan });
        else {
          printTable(
            ["TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"],
            plan.map((p) => [p.topic, p.partition, p.current ?? "-", p.target]),
          );
          process.stderr.write(
            o.execute ? "offsets reset\n" : "dry run: nothing changed (add --execute to apply)\n",
          );
        }
      }),
    );
}

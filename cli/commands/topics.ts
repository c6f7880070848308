// tern topics create|list|describe|alter-config|add-partitions|delete-records|delete
import type { Command } from "commander";
import { Admin, type LogCleaningInfo } from "../../libs/client/index.js";
import {
  parseBigIntArg,
  parseIntArg,
  printJson,
  printTable,
  EXIT_CLUSTER_ERROR,
  UsageError,
} from "../output.js";
import { globals, withAdmin } from "./context.js";
import { imbalanceRatio, preferredCounts } from "../../libs/raft-host/leader-balance.js";

export function registerTopics(program: Command): void {
  const topics = program.command("topics").description("create, list, describe and delete topics");

  topics
    .command("create <name>")
    .description("create a topic")
    .option("-p, --partitions <n>", "number of partitions", "1")
    .option("-r, --replication-factor <n>", "replicas per partition", "3")
    .option("-c, --config <key=value...>", "topic configuration entries")
    .option(
      "--if-not-exists",
      "succeed (exit 0) when the topic already exists; its settings are left as they are",
    )
    .action(
      async (
        name: string,
        o: {
          partitions: string;
          replicationFactor: string;
          config?: string[];
          ifNotExists?: boolean;
        },
        cmd: Command,
      ) => {
        const g = globals(cmd);
        const config = Object.fromEntries(
          (o.config ?? []).map((kv) => {
            const i = kv.indexOf("=");
            return [kv.slice(0, i), kv.slice(i + 1)];
          }),
        );
        await withAdmin(g, async (admin) => {
          const [r] = await admin.createTopics([
            {
              name,
              partitions: parseIntArg(o.partitions, "--partitions", 1),
              replicationFactor: parseIntArg(o.replicationFactor, "--replication-factor", 1),
              config,
            },
          ]);
          if (r?.error?.errorName === "TOPIC_ALREADY_EXISTS" && o.ifNotExists) {
            if (g.json) printJson({ name, created: false, exists: true });
            else process.stdout.write(`topic ${name} already exists\n`);
            return;
          }
          if (r?.error) {
            if (g.json) printJson({ name, error: r.error.errorName, message: r.error.message });
            else process.stderr.write(`error: ${r.error.errorName}: ${r.error.message}\n`);
            process.exitCode = EXIT_CLUSTER_ERROR;
            return;
          }
          if (g.json) printJson({ name, created: true, partitions: r?.topic?.partitions.length });
          else process.stdout.write(`created topic ${name}\n`);
        });
      },
    );

  topics
    .command("list")
    .description("list topic names")
    .option("--internal", "include internal topics")
    .action(async (o: { internal?: boolean }, cmd: Command) => {
      const g = globals(cmd);
      await withAdmin(g, async (admin) => {
        const names = await admin.listTopics({ includeInternal: Boolean(o.internal) });
        if (g.json) printJson(names);
        else process.stdout.write(names.map((n) => `${n}\n`).join(""));
      });
    });

  topics
    .command("describe [names...]")
    .description(
      "partitions, replicas and leaders (all topics when none named), and per node the leader imbalance (partitions it is the preferred leader of that another node leads); for a compacted topic each partition's dirty ratio and last cleaned offset on its leader",
    )
    .action(async (names: string[], _o: unknown, cmd: Command) => {
      const g = globals(cmd);
      await withAdmin(g, async (admin) => {
        const out = await admin.describeTopics(names ?? []);
        const failed = out.filter((t) => t.error);
        const cleaning = await cleaningOf(admin, out);
        if (g.json) {
          printJson(
            out.map((t) =>
              t.error
                ? { name: t.name, error: t.error.errorName, message: t.error.message }
                : cleaning.size === 0
                  ? t.topic
                  : {
                      ...t.topic,
                      partitions: t.topic!.partitions.map((p) => {
                        const c = cleaning.get(`${t.name}/${p.partition}`);
                        return c === undefined ? p : { ...p, cleaning: c };
                      }),
                    },
            ),
          );
        } else {
          // The cleaning columns only when a compacted topic is described.
          const figures = (topic: string, partition: number): string[] => {
            if (cleaning.size === 0) return [];
            const c = cleaning.get(`${topic}/${partition}`);
            if (c === undefined) return ["-", "-"];
            if ("error" in c) return ["?", "?"];
            return [c.dirtyRatio.toFixed(2), String(c.lastCleanedOffset)];
          };
          printTable(
            [
              "TOPIC",
              "PARTITION",
              "LEADER",
              "TERM",
              "REPLICAS",
              ...(cleaning.size === 0 ? [] : ["DIRTY_RATIO", "LAST_CLEANED"]),
              "TOPIC_ID",
              "CONFIG",
            ],
            out.flatMap((t) =>
              t.error
                ? [
                    [
                      t.name,
                      "-",
                      "-",
                      "-",
                      "-",
                      ...(cleaning.size === 0 ? [] : ["-", "-"]),
                      "-",
                      `error: ${t.error.errorName}`,
                    ],
                  ]
                : t.topic!.partitions.map((p) => [
                    t.name,
                    p.partition,
                    p.leader,
                    p.leaderTerm,
                    p.replicas.join(","),
                    ...figures(t.name, p.partition),
                    p.partition === 0 ? (t.topic!.id ?? "-") : "",
                    p.partition === 0
                      ? Object.entries(t.topic!.config)
                          .map(([k, v]) => `${k}=${v}`)
                          .join(",")
                      : "",
                  ]),
            ),
          );
          // Kafka's leader imbalance over the partitions described (leader-balance.ts).
          const counts = preferredCounts(out.flatMap((t) => t.topic?.partitions ?? []));
          if (counts.size > 0) {
            process.stdout.write("\n");
            printTable(
              ["NODE", "PREFERRED_LEADER_OF", "LED_ELSEWHERE", "LEADER_IMBALANCE"],
              [...counts]
                .sort((a, b) => a[0] - b[0])
                .map(([node, c]) => [
                  node,
                  c.preferred,
                  c.ledElsewhere,
                  `${(imbalanceRatio(c) * 100).toFixed(1)}%`,
                ]),
            );
          }
        }
        if (failed.length > 0) process.exitCode = EXIT_CLUSTER_ERROR;
      });
    });

  topics
    .command("alter-config <name>")
    .description("change a topic's configuration incrementally (every replica applies it)")
    .option("-s, --set <key=value...>", "set these keys")
    .option("-d, --delete <key...>", "remove these keys (back to the default)")
    .option("--validate-only", "check the change without making it")
    .action(
      async (
        name: string,
        o: { set?: string[]; delete?: string[]; validateOnly?: boolean },
        cmd: Command,
      ) => {
        const g = globals(cmd);
        const set = parseConfigEntries(o.set ?? [], "--set");
        const del = o.delete ?? [];
        if (Object.keys(set).length + del.length === 0)
          throw new UsageError("give --set key=value and/or --delete key");
        await withAdmin(g, async (admin) => {
          const [r] = await admin.alterTopicConfigs([{ name, set, delete: del }], {
            validateOnly: Boolean(o.validateOnly),
          });
          reportAlteration(
            g.json,
            name,
            r,
            (t) => ({ config: t.config }),
            o.validateOnly ? `config change of ${name} is valid` : `altered config of ${name}`,
          );
        });
      },
    );

  topics
    .command("add-partitions <name>")
    .description("raise a topic's partition count (partitions are never removed)")
    .requiredOption("-p, --total <n>", "the new total number of partitions")
    .option("--validate-only", "check the change without making it")
    .action(async (name: string, o: { total: string; validateOnly?: boolean }, cmd: Command) => {
      const g = globals(cmd);
      const totalCount = parseIntArg(o.total, "--total", 1);
      await withAdmin(g, async (admin) => {
        const [r] = await admin.createPartitions([{ name, totalCount }], {
          validateOnly: Boolean(o.validateOnly),
        });
        reportAlteration(
          g.json,
          name,
          r,
          (t) => ({ partitions: t.partitions.length }),
          o.validateOnly
            ? `partition increase of ${name} is valid`
            : `${name} now has ${totalCount} partitions`,
        );
      });
    });

  topics
    .command("delete-records <name>")
    .description(
      "delete records before an offset: moves the partitions' log start (kafka-delete-records)",
    )
    .requiredOption("-p, --partition <n...>", "the partitions")
    .requiredOption("-o, --offset <n>", "the new log start offset; -1: the high watermark")
    .action(async (name: string, o: { partition: string[]; offset: string }, cmd: Command) => {
      const g = globals(cmd);
      const offset = parseBigIntArg(o.offset, "--offset");
      if (offset < -1n)
        throw new UsageError(`--offset must be -1 or an offset >= 0, got "${o.offset}"`);
      const partitions = [...new Set(o.partition.map((p) => parseIntArg(p, "--partition", 0)))];
      await withAdmin(g, async (admin) => {
        const out = await admin.deleteRecords(
          partitions.map((partition) => ({ topic: name, partition, offset })),
        );
        if (g.json)
          printJson(
            out.map((r) => ({
              topic: r.topic,
              partition: r.partition,
              ...(r.error
                ? { error: r.error.errorName, message: r.error.message }
                : { lowWatermark: r.lowWatermark }),
            })),
          );
        else
          printTable(
            ["TOPIC", "PARTITION", "LOW_WATERMARK"],
            out.map((r) => [
              r.topic,
              r.partition,
              r.error ? `error: ${r.error.errorName}: ${r.error.message}` : r.lowWatermark,
            ]),
          );
        if (out.some((r) => r.error)) process.exitCode = EXIT_CLUSTER_ERROR;
      });
    });

  topics
    .command("delete <names...>")
    .description("delete topics")
    .action(async (names: string[], _o: unknown, cmd: Command) => {
      const g = globals(cmd);
      await withAdmin(g, async (admin) => {
        const out = await admin.deleteTopics(names);
        if (g.json)
          printJson(
            out.map((t) => ({ name: t.name, deleted: !t.error, error: t.error?.errorName })),
          );
        else
          for (const t of out)
            process.stdout.write(
              t.error
                ? `${t.name}: ${t.error.errorName}: ${t.error.message}\n`
                : `deleted topic ${t.name}\n`,
            );
        if (out.some((t) => t.error)) process.exitCode = EXIT_CLUSTER_ERROR;
      });
    });
}

function parseConfigEntries(entries: readonly string[], flag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kv of entries) {
    const i = kv.indexOf("=");
    if (i <= 0) throw new UsageError(`${flag} takes key=value, got "${kv}"`);
    out[kv.slice(0, i)] = kv.slice(i + 1);
  }
  return out;
}

type Outcome = Awaited<ReturnType<Admin["alterTopicConfigs"]>>[number] | undefined;

/** One topic's answer to alter-config / add-partitions: a line (or JSON); exit 1 on an error. */
function reportAlteration(
  json: boolean,
  name: string,
  r: Outcome,
  fields: (t: NonNullable<NonNullable<Outcome>["topic"]>) => Record<string, unknown>,
  done: string,
): void {
  if (r === undefined || r.error || r.topic === undefined) {
    const errorName = r?.error?.errorName ?? "UNKNOWN_SERVER_ERROR";
    const message = r?.error?.message ?? "no answer for the topic";
    if (json) printJson({ name, error: errorName, message });
    else process.stderr.write(`error: ${errorName}: ${message}\n`);
    process.exitCode = EXIT_CLUSTER_ERROR;
    return;
  }
  if (json) printJson({ name, ...fields(r.topic) });
  else process.stdout.write(`${done}\n`);
}

type Described = Awaited<ReturnType<Admin["describeTopics"]>>;
/** A partition's figures as `describe` shows them (whether the topic is compacted goes without saying). */
type Cleaning = Omit<LogCleaningInfo, "compacted"> | { error: string };

/** The cleaning figures of every partition of the compacted topics described, by "topic/partition". */
async function cleaningOf(admin: Admin, described: Described): Promise<Map<string, Cleaning>> {
  const tps = described.flatMap((t) =>
    t.topic !== undefined && (t.topic.config["cleanup.policy"] ?? "").includes("compact")
      ? t.topic.partitions.map((p) => ({ topic: t.name, partition: p.partition }))
      : [],
  );
  const out = new Map<string, Cleaning>();
  for (const r of await admin.describeLogCleaning(tps)) {
    if (r.cleaning === undefined) {
      out.set(`${r.topic}/${r.partition}`, { error: r.error ?? "no answer" });
      continue;
    }
    const { compacted: _compacted, ...figures } = r.cleaning;
    out.set(`${r.topic}/${r.partition}`, figures);
  }
  return out;
}

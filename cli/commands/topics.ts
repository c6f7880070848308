// tern topics create|list|describe|delete
import type { Command } from "commander";
import { Admin } from "../../libs/client/index.js";
import { parseIntArg, printJson, printTable, EXIT_CLUSTER_ERROR } from "../output.js";
import { globals } from "./context.js";

export function registerTopics(program: Command): void {
  const topics = program.command("topics").description("create, list, describe and delete topics");

  topics.command("create <name>").description("create a topic")
    .option("-p, --partitions <n>", "number of partitions", "1")
    .option("-r, --replication-factor <n>", "replicas per partition", "3")
    .option("-c, --config <key=value...>", "topic configuration entries")
    .option("--if-not-exists", "succeed (exit 0) when the topic already exists; its settings are left as they are")
    .action(async (name: string, o: { partitions: string; replicationFactor: string; config?: string[]; ifNotExists?: boolean }, cmd: Command) => {
      const g = globals(cmd);
      const config = Object.fromEntries((o.config ?? []).map((kv) => { const i = kv.indexOf("="); return [kv.slice(0, i), kv.slice(i + 1)]; }));
      const admin = new Admin({ bootstrap: g.bootstrap });
      try {
        const [r] = await admin.createTopics([{ name, partitions: parseIntArg(o.partitions, "--partitions", 1), replicationFactor: parseIntArg(o.replicationFactor, "--replication-factor", 1), config }]);
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
      } finally {
        await admin.close();
      }
    });

  topics.command("list").description("list topic names")
    .option("--internal", "include internal topics")
    .action(async (o: { internal?: boolean }, cmd: Command) => {
      const g = globals(cmd);
      const admin = new Admin({ bootstrap: g.bootstrap });
      try {
        const names = await admin.listTopics({ includeInternal: Boolean(o.internal) });
        if (g.json) printJson(names);
        else process.stdout.write(names.map((n) => `${n}\n`).join(""));
      } finally {
        await admin.close();
      }
    });

  topics.command("describe [names...]").description("partitions, replicas and leaders (all topics when none named)")
    .action(async (names: string[], _o: unknown, cmd: Command) => {
      const g = globals(cmd);
      const admin = new Admin({ bootstrap: g.bootstrap });
      try {
        const out = await admin.describeTopics(names ?? []);
        const failed = out.filter((t) => t.error);
        if (g.json) {
          printJson(out.map((t) => (t.error ? { name: t.name, error: t.error.errorName, message: t.error.message } : t.topic)));
        } else {
          printTable(["TOPIC", "PARTITION", "LEADER", "TERM", "REPLICAS", "CONFIG"], out.flatMap((t) => t.error
            ? [[t.name, "-", "-", "-", "-", `error: ${t.error.errorName}`]]
            : t.topic!.partitions.map((p) => [t.name, p.partition, p.leader, p.leaderTerm, p.replicas.join(","), p.partition === 0 ? Object.entries(t.topic!.config).map(([k, v]) => `${k}=${v}`).join(",") : ""])));
        }
        if (failed.length > 0) process.exitCode = EXIT_CLUSTER_ERROR;
      } finally {
        await admin.close();
      }
    });

  topics.command("delete <names...>").description("delete topics")
    .action(async (names: string[], _o: unknown, cmd: Command) => {
      const g = globals(cmd);
      const admin = new Admin({ bootstrap: g.bootstrap });
      try {
        const out = await admin.deleteTopics(names);
        if (g.json) printJson(out.map((t) => ({ name: t.name, deleted: !t.error, error: t.error?.errorName })));
        else for (const t of out) process.stdout.write(t.error ? `${t.name}: ${t.error.errorName}: ${t.error.message}\n` : `deleted topic ${t.name}\n`);
        if (out.some((t) => t.error)) process.exitCode = EXIT_CLUSTER_ERROR;
      } finally {
        await admin.close();
      }
    });
}

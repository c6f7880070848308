// tern consume TOPIC: prints record values (or JSON lines with --json). Without --follow it
// stops at the end offsets seen at start (or --max-messages); with --follow it waits for more.
// With --group G (and no --partition) it joins consumer group G (subscribe, as
// kafka-console-consumer --group does): partitions are shared with the group's other members,
// and what was printed is committed when a partition is revoked and before exiting (end,
// SIGINT or SIGTERM). With --partition it reads that partition as a simple group.
import type { Command } from "commander";
import { Consumer, Admin, type ConsumerRecord, type TopicPartition } from "../../libs/client/index.js";
import { parseIntArg, toJson, UsageError } from "../output.js";
import { globals } from "./context.js";

interface ConsumeOptions {
  isolation: string;
  fromBeginning?: boolean;
  follow?: boolean;
  maxMessages?: string;
  partition?: string;
  group?: string;
  timeoutMs: string;
  printKey?: boolean;
}

const IDLE_POLL_MS = 500;

export function registerConsume(program: Command): void {
  program.command("consume <topic>").description("print records of a topic")
    .option("--isolation <level>", "read_committed or read_uncommitted", "read_uncommitted")
    .option("--from-beginning", "start at the earliest offset (default: the end, or the group's committed offsets)")
    .option("-f, --follow", "keep waiting for new records")
    .option("-n, --max-messages <n>", "stop after N records")
    .option("-p, --partition <n>", "only this partition")
    .option("--group <id>", "join this consumer group (start from and commit to its offsets)")
    .option("--timeout-ms <ms>", "without --follow: give up waiting for the end after this long", "30000")
    .option("--print-key", "print KEY<TAB>VALUE")
    .action(async (topic: string, o: ConsumeOptions, cmd: Command) => {
      const g = globals(cmd);
      if (o.isolation !== "read_committed" && o.isolation !== "read_uncommitted") throw new UsageError(`--isolation must be read_committed or read_uncommitted, got ${o.isolation}`);
      const max = o.maxMessages === undefined ? Infinity : parseIntArg(o.maxMessages, "--max-messages", 1);
      const timeoutMs = parseIntArg(o.timeoutMs, "--timeout-ms");
      const admin = new Admin({ bootstrap: g.bootstrap });
      let tps: TopicPartition[];
      try {
        const [d] = await admin.describeTopics([topic]);
        if (d?.error) throw d.error;
        tps = d!.topic!.partitions.map((p) => ({ topic, partition: p.partition }));
      } finally {
        await admin.close();
      }
      if (o.partition !== undefined) {
        const p = parseIntArg(o.partition, "--partition");
        if (!tps.some((tp) => tp.partition === p)) throw new UsageError(`${topic} has no partition ${p}`);
        tps = [{ topic, partition: p }];
      }
      if (o.group && o.partition === undefined) {
        await consumeInGroup(topic, o.group, tps, o, { bootstrap: g.bootstrap, json: g.json, max, timeoutMs });
        return;
      }
      const consumer = new Consumer({ bootstrap: g.bootstrap, isolationLevel: o.isolation, autoOffsetReset: o.fromBeginning ? "earliest" : "latest", ...(o.group ? { groupId: o.group } : {}) });
      let stop = false;
      const onSigint = (): void => { stop = true; };
      process.once("SIGINT", onSigint);
      let printed = 0;
      try {
        consumer.assign(tps);
        const ends = new Map<number, bigint>();
        for (const tp of tps) {
          await consumer.seekToEnd([tp]);
          ends.set(tp.partition, await consumer.position(tp));
        }
        if (o.fromBeginning) await consumer.seekToBeginning();
        else if (o.group) {
          // Fresh positions: the group's committed offsets (or the end).
          consumer.assign([]);
          consumer.assign(tps);
        }
        const starts = await Promise.all(tps.map(async (tp) => `${tp.partition}@${await consumer.position(tp)}`));
        process.stderr.write(`consuming ${topic} from ${starts.join(",")}\n`);
        const deadline = Date.now() + timeoutMs;
        const atEnd = async (): Promise<boolean> => {
          for (const tp of tps) if ((await consumer.position(tp)) < ends.get(tp.partition)!) return false;
          return true;
        };
        while (!stop && printed < max) {
          if (!o.follow && ((await atEnd()) || Date.now() > deadline)) break;
          const records = await consumer.poll({ maxPollRecords: Math.min(1000, max - printed), timeoutMs: IDLE_POLL_MS });
          for (const r of records) print(r, g.json, Boolean(o.printKey));
          printed += records.length;
        }
        if (o.group) await consumer.commitSync();
      } finally {
        process.removeListener("SIGINT", onSigint);
        await consumer.close();
      }
      process.stderr.write(`consumed ${printed} records\n`);
    });
}

/** Subscribed to the topic as a member of the group; commits what it printed (see the header). */
async function consumeInGroup(topic: string, groupId: string, tps: TopicPartition[], o: ConsumeOptions, g: { bootstrap: string | undefined; json: boolean; max: number; timeoutMs: number }): Promise<void> {
  const consumer = new Consumer({
    bootstrap: g.bootstrap, groupId, clientId: "tern-cli", isolationLevel: o.isolation as "read_committed" | "read_uncommitted",
    autoOffsetReset: o.fromBeginning ? "earliest" : "latest",
  });
  // Next offset after the last printed record, per partition still owned.
  const printedUpTo = new Map<number, bigint>();
  const commitPrinted = async (partitions?: readonly TopicPartition[]): Promise<void> => {
    const wanted = partitions ? new Set(partitions.map((p) => p.partition)) : undefined;
    const offsets = [...printedUpTo].filter(([p]) => !wanted || wanted.has(p)).map(([partition, offset]) => ({ topic, partition, offset }));
    if (offsets.length > 0) await consumer.commitSync(offsets);
    for (const { partition } of offsets) printedUpTo.delete(partition);
  };
  let stop = false;
  const onSignal = (): void => { stop = true; };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  let printed = 0;
  try {
    const ends = new Map((await consumer.endOffsets(tps)).map((e) => [e.partition, e.offset]));
    consumer.subscribe([topic], {
      onPartitionsAssigned: (assigned) => void process.stderr.write(`assigned ${topic} partitions ${assigned.map((p) => p.partition).join(",")}\n`),
      // Commit what was printed before the partition moves to another member.
      onPartitionsRevoked: (revoked) => commitPrinted(revoked),
      onPartitionsLost: (lost) => { for (const p of lost) printedUpTo.delete(p.partition); },
    });
    process.stderr.write(`consuming ${topic} in group ${groupId}\n`);
    const deadline = Date.now() + g.timeoutMs;
    let idleSince = Date.now();
    const atEnd = async (): Promise<boolean> => {
      const owned = consumer.assignment();
      if (owned.length === 0) return false;
      for (const tp of owned) if ((await consumer.position(tp)) < (ends.get(tp.partition) ?? 0n)) return false;
      return true;
    };
    while (!stop && printed < g.max) {
      if (!o.follow && (Date.now() > deadline || (Date.now() - idleSince > IDLE_POLL_MS * 2 && (await atEnd())))) break;
      const records = await consumer.poll({ maxPollRecords: Math.min(1000, g.max - printed), timeoutMs: IDLE_POLL_MS });
      if (records.length > 0) idleSince = Date.now();
      for (const r of records) {
        print(r, g.json, Boolean(o.printKey));
        printedUpTo.set(r.partition, r.offset + 1n);
      }
      printed += records.length;
    }
    await commitPrinted();
  } finally {
    process.removeListener("SIGINT", onSignal);
    process.removeListener("SIGTERM", onSignal);
    await consumer.close();
  }
  process.stderr.write(`consumed ${printed} records\n`);
}

function print(r: ConsumerRecord, json: boolean, printKey: boolean): void {
  if (json) {
    process.stdout.write(`${JSON.stringify(JSON.parse(toJson({ partition: r.partition, offset: r.offset, key: r.key?.toString() ?? null, value: r.value?.toString() ?? null, timestampMs: r.timestampMs })))}\n`);
  } else {
    process.stdout.write(`${printKey ? `${r.key?.toString() ?? ""}\t` : ""}${r.value?.toString() ?? ""}\n`);
  }
}

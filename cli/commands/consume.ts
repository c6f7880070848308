// tern consume TOPIC...: prints records (a kcat-like --format, or JSON lines with --json). Starts
// at the end, the group's offsets, the beginning, an --offset (absolute N, -N from the end,
// beginning, end) or --from-timestamp; without --follow it stops at the end offsets seen at
// start (or --max-messages); with --follow it waits for more.
// With --group G (and no --partition) it joins consumer group G (subscribe, as
// kafka-console-consumer --group does): partitions of every named topic are shared with the
// group's other members, --from-beginning is the reset policy for partitions without a committed
// offset, and what was printed is committed when a partition is revoked and before exiting (end,
// SIGINT or SIGTERM). With --partition it reads that partition as a simple group.
import type { Command } from "commander";
import {
  Consumer,
  Admin,
  type ConsumerRecord,
  type TopicPartition,
} from "../../libs/client/index.js";
import { parseIntArg, UsageError } from "../output.js";
import { checkFormat, formatRecord, recordJson } from "../record-format.js";
import { globals, type GlobalOptions } from "./context.js";

interface ConsumeOptions {
  isolation: string;
  fromBeginning?: boolean;
  offset?: string;
  fromTimestamp?: string;
  follow?: boolean;
  maxMessages?: string;
  partition?: string;
  group?: string;
  timeoutMs: string;
  printKey?: boolean;
  format?: string;
}

const IDLE_POLL_MS = 500;
const TOPICS_MAX = 100;

/** Where to start: the reset policy, or an explicit position per partition. */
type Start =
  | { kind: "default" }
  | { kind: "beginning" }
  | { kind: "end" }
  | { kind: "absolute"; offset: bigint }
  | { kind: "fromEnd"; count: bigint }
  | { kind: "timestamp"; ms: number };

export function parseStart(
  o: Pick<ConsumeOptions, "fromBeginning" | "offset" | "fromTimestamp">,
): Start {
  const given = [o.fromBeginning, o.offset !== undefined, o.fromTimestamp !== undefined].filter(
    Boolean,
  ).length;
  if (given > 1)
    throw new UsageError("give at most one of --from-beginning, --offset, --from-timestamp");
  if (o.fromBeginning) return { kind: "beginning" };
  if (o.fromTimestamp !== undefined) {
    const ms = /^\d+$/.test(o.fromTimestamp)
      ? Number(o.fromTimestamp)
      : Date.parse(o.fromTimestamp);
    if (!Number.isSafeInteger(ms) || ms < 0)
      throw new UsageError(
        `--from-timestamp takes milliseconds since the epoch or an ISO date, got "${o.fromTimestamp}"`,
      );
    return { kind: "timestamp", ms };
  }
  if (o.offset === undefined) return { kind: "default" };
  const v = o.offset.trim();
  if (v === "beginning" || v === "earliest") return { kind: "beginning" };
  if (v === "end" || v === "latest") return { kind: "end" };
  if (/^\d{1,19}$/.test(v)) return { kind: "absolute", offset: BigInt(v) };
  if (/^-\d{1,19}$/.test(v)) return { kind: "fromEnd", count: -BigInt(v) };
  throw new UsageError(
    `--offset takes N, -N (N from the end), beginning or end, got "${o.offset}"`,
  );
}

export function registerConsume(program: Command): void {
  program
    .command("consume <topics...>")
    .description("print records of one or more topics")
    .option("--isolation <level>", "read_committed or read_uncommitted", "read_uncommitted")
    .option(
      "--from-beginning",
      "start at the earliest offset (default: the end, or the group's committed offsets)",
    )
    .option(
      "-o, --offset <spec>",
      "start at offset N, N from the end (-N), beginning or end, in every partition read",
    )
    .option(
      "--from-timestamp <time>",
      "start at the first record at or after this time (ms since the epoch, or an ISO date)",
    )
    .option("-f, --follow", "keep waiting for new records")
    .option("-n, --max-messages <n>", "stop after N records")
    .option("-p, --partition <n>", "only this partition (of each topic)")
    .option("--group <id>", "join this consumer group (start from and commit to its offsets)")
    .option(
      "--timeout-ms <ms>",
      "without --follow: give up waiting for the end after this long",
      "30000",
    )
    .option("--print-key", "print KEY<TAB>VALUE (the same as --format '%k\\t%s')")
    .option(
      "-F, --format <fmt>",
      "kcat-like: %t topic %p partition %o offset %k key %s value %T timestamp %h headers %K/%S key/value length, \\n \\t",
    )
    .action(async (topics: string[], o: ConsumeOptions, cmd: Command) => {
      const g = globals(cmd);
      if (o.isolation !== "read_committed" && o.isolation !== "read_uncommitted")
        throw new UsageError(
          `--isolation must be read_committed or read_uncommitted, got ${o.isolation}`,
        );
      if (topics.length > TOPICS_MAX) throw new UsageError(`at most ${TOPICS_MAX} topics`);
      const max =
        o.maxMessages === undefined ? Infinity : parseIntArg(o.maxMessages, "--max-messages", 1);
      const timeoutMs = parseIntArg(o.timeoutMs, "--timeout-ms");
      const start = parseStart(o);
      const subscribed = Boolean(o.group) && o.partition === undefined;
      const startsAtGroupOffsets =
        start.kind === "default" || (subscribed && start.kind === "beginning");
      if (o.group && !startsAtGroupOffsets)
        throw new UsageError(
          `--group starts from the group's offsets: drop ${subscribed ? "--offset / --from-timestamp" : "--from-beginning / --offset / --from-timestamp"}`,
        );
      const format = o.format ?? (o.printKey ? "%k\\t%s" : "%s");
      checkFormat(format);
      const partitionOnly =
        o.partition === undefined ? undefined : parseIntArg(o.partition, "--partition");
      const write = (r: ConsumerRecord): void =>
        void process.stdout.write(`${g.json ? recordJson(r) : formatRecord(format, r)}\n`);
      if (subscribed) {
        await consumeInGroup(topics, o.group!, o, {
          client: g.client,
          max,
          timeoutMs,
          fromBeginning: start.kind === "beginning",
          write,
        });
        return;
      }
      const admin = new Admin(g.client);
      const consumer = new Consumer({
        ...g.client,
        isolationLevel: o.isolation,
        autoOffsetReset: start.kind === "beginning" ? "earliest" : "latest",
        ...(o.group ? { groupId: o.group } : {}),
      });
      let stop = false;
      const onSigint = (): void => {
        stop = true;
      };
      process.once("SIGINT", onSigint);
      let printed = 0;
      try {
        const tps = await partitionsOf(admin, topics, partitionOnly);
        consumer.assign(tps);
        const key = (tp: TopicPartition): string => `${tp.topic}/${tp.partition}`;
        const ends = new Map<string, bigint>();
        for (const tp of tps) {
          await consumer.seekToEnd([tp]);
          ends.set(key(tp), await consumer.position(tp));
        }
        await seekToStart(consumer, admin, tps, start, ends, o, key);
        const starts = await Promise.all(
          tps.map(
            async (tp) =>
              `${topics.length > 1 ? `${tp.topic}:` : ""}${tp.partition}@${await consumer.position(tp)}`,
          ),
        );
        process.stderr.write(`consuming ${topics.join(",")} from ${starts.join(",")}\n`);
        const deadline = Date.now() + timeoutMs;
        const atEnd = async (): Promise<boolean> => {
          for (const tp of tps)
            if ((await consumer.position(tp)) < ends.get(key(tp))!) return false;
          return true;
        };
        while (!stop && printed < max) {
          if (!o.follow && ((await atEnd()) || Date.now() > deadline)) break;
          const records = await consumer.poll({
            maxPollRecords: Math.min(1000, max - printed),
            timeoutMs: IDLE_POLL_MS,
          });
          for (const r of records) write(r);
          printed += records.length;
        }
        if (o.group) await consumer.commitSync();
      } finally {
        process.removeListener("SIGINT", onSigint);
        await consumer.close();
        await admin.close();
      }
      process.stderr.write(`consumed ${printed} records\n`);
    });
}

async function partitionsOf(
  admin: Admin,
  topics: readonly string[],
  only: number | undefined,
): Promise<TopicPartition[]> {
  const described = await admin.describeTopics([...new Set(topics)]);
  const out: TopicPartition[] = [];
  for (const d of described) {
    if (d.error) throw d.error;
    const parts = d.topic!.partitions.map((p) => p.partition);
    if (only !== undefined && !parts.includes(only))
      throw new UsageError(`${d.name} has no partition ${only}`);
    for (const p of parts)
      if (only === undefined || p === only) out.push({ topic: d.name, partition: p });
  }
  return out;
}

async function seekToStart(
  consumer: Consumer,
  admin: Admin,
  tps: readonly TopicPartition[],
  start: Start,
  ends: ReadonlyMap<string, bigint>,
  o: ConsumeOptions,
  key: (tp: TopicPartition) => string,
): Promise<void> {
  switch (start.kind) {
    case "beginning":
      return consumer.seekToBeginning();
    case "end":
      return;
    case "default":
      if (o.group) {
        // Fresh positions: the group's committed offsets (or the end).
        consumer.assign([]);
        consumer.assign(tps);
      }
      return;
    default:
  }
  for (const tp of tps) {
    const end = ends.get(key(tp))!;
    const earliest = await admin.listOffset(tp, "earliest");
    let at: bigint;
    if (start.kind === "absolute") at = start.offset;
    else if (start.kind === "fromEnd") at = end - start.count;
    else {
      const found = await admin.listOffset(tp, { timestampMs: start.ms });
      at = found < 0n ? end : found;
    }
    // Clamped to what the partition holds, as kcat does.
    consumer.seek(tp, at < earliest ? earliest : at > end ? end : at);
  }
}

/** Subscribed to the topics as a member of the group; commits what it printed (see the header). */
async function consumeInGroup(
  topics: readonly string[],
  groupId: string,
  o: ConsumeOptions,
  g: {
    client: GlobalOptions["client"];
    max: number;
    timeoutMs: number;
    fromBeginning: boolean;
    write: (r: ConsumerRecord) => void;
  },
): Promise<void> {
  const admin = new Admin(g.client);
  const consumer = new Consumer({
    ...g.client,
    groupId,
    clientId: "tern-cli",
    isolationLevel: o.isolation as "read_committed" | "read_uncommitted",
    autoOffsetReset: g.fromBeginning ? "earliest" : "latest",
  });
  const key = (tp: TopicPartition): string => `${tp.topic}/${tp.partition}`;
  // Next offset after the last printed record, per partition still owned.
  const printedUpTo = new Map<string, TopicPartition & { offset: bigint }>();
  const commitPrinted = async (partitions?: readonly TopicPartition[]): Promise<void> => {
    const wanted = partitions ? new Set(partitions.map(key)) : undefined;
    const offsets = [...printedUpTo.values()].filter((p) => !wanted || wanted.has(key(p)));
    if (offsets.length > 0) await consumer.commitSync(offsets);
    for (const p of offsets) printedUpTo.delete(key(p));
  };
  let stop = false;
  const onSignal = (): void => {
    stop = true;
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  let printed = 0;
  try {
    const tps = await partitionsOf(admin, topics, undefined);
    const ends = new Map((await consumer.endOffsets(tps)).map((e) => [key(e), e.offset]));
    const label = (ps: readonly TopicPartition[]): string =>
      ps.map((p) => (topics.length > 1 ? `${p.topic}:${p.partition}` : `${p.partition}`)).join(",");
    consumer.subscribe([...new Set(topics)], {
      onPartitionsAssigned: (assigned) =>
        void process.stderr.write(`assigned ${topics.join(",")} partitions ${label(assigned)}\n`),
      // Commit what was printed before the partition moves to another member.
      onPartitionsRevoked: (revoked) => commitPrinted(revoked),
      onPartitionsLost: (lost) => {
        for (const p of lost) printedUpTo.delete(key(p));
      },
    });
    process.stderr.write(`consuming ${topics.join(",")} in group ${groupId}\n`);
    const deadline = Date.now() + g.timeoutMs;
    let idleSince = Date.now();
    const atEnd = async (): Promise<boolean> => {
      const owned = consumer.assignment();
      if (owned.length === 0) return false;
      for (const tp of owned)
        if ((await consumer.position(tp)) < (ends.get(key(tp)) ?? 0n)) return false;
      return true;
    };
    while (!stop && printed < g.max) {
      if (
        !o.follow &&
        (Date.now() > deadline || (Date.now() - idleSince > IDLE_POLL_MS * 2 && (await atEnd())))
      )
        break;
      const records = await consumer.poll({
        maxPollRecords: Math.min(1000, g.max - printed),
        timeoutMs: IDLE_POLL_MS,
      });
      if (records.length > 0) idleSince = Date.now();
      for (const r of records) {
        g.write(r);
        printedUpTo.set(key(r), { topic: r.topic, partition: r.partition, offset: r.offset + 1n });
      }
      printed += records.length;
    }
    await commitPrinted();
  } finally {
    process.removeListener("SIGINT", onSignal);
    process.removeListener("SIGTERM", onSignal);
    await consumer.close();
    await admin.close();
  }
  process.stderr.write(`consumed ${printed} records\n`);
}

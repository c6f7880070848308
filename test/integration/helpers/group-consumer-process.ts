// A subscribed consumer as its own process, for real-process group tests: prints one JSON line
// per event on stdout ("assigned" / "revoked" / "lost" with partitions, "owned" after every
// change, "record" per record when --print-records) and on SIGTERM closes (commit with
// auto-commit, revoke, leave) and exits 0. Usage:
//   node dist/test/integration/helpers/group-consumer-process.js --bootstrap B --group G
//     --topics a,b | --regex 'x.*' [--auto-commit-ms N] [--instance-id I] [--print-records]
//     [--max-poll-records N] [--poll-delay-ms N (a pause after each poll while it owns partitions: slow processing)]
import { parseArgs } from "node:util";
import { Consumer, type TopicPartition } from "../../../libs/client/index.js";

const { values } = parseArgs({
  options: {
    bootstrap: { type: "string" },
    group: { type: "string" },
    topics: { type: "string" },
    regex: { type: "string" },
    "auto-commit-ms": { type: "string" },
    "instance-id": { type: "string" },
    "max-poll-interval-ms": { type: "string" },
    "print-records": { type: "boolean" },
    "max-poll-records": { type: "string" },
    "poll-delay-ms": { type: "string" },
  },
});

const emit = (event: string, body: Record<string, unknown> = {}): void => {
  process.stdout.write(`${JSON.stringify({ event, ...body })}\n`);
};
const names = (tps: readonly TopicPartition[]): string[] =>
  tps.map((tp) => `${tp.topic}-${tp.partition}`).sort();

const autoCommitMs = values["auto-commit-ms"] ? Number(values["auto-commit-ms"]) : undefined;
const consumer = new Consumer({
  bootstrap: values.bootstrap!,
  groupId: values.group!,
  clientId: "group-consumer-process",
  ...(autoCommitMs !== undefined
    ? { enableAutoCommit: true, autoCommitIntervalMs: autoCommitMs }
    : {}),
  ...(values["instance-id"] ? { groupInstanceId: values["instance-id"] } : {}),
  ...(values["max-poll-interval-ms"]
    ? { maxPollIntervalMs: Number(values["max-poll-interval-ms"]) }
    : {}),
});
const report = (): void =>
  emit("owned", {
    partitions: names(consumer.assignment()),
    memberEpoch: consumer.groupMetadata().generationId,
  });
consumer.subscribe(values.regex ? new RegExp(values.regex) : values.topics!.split(","), {
  onPartitionsAssigned: (tps) => {
    emit("assigned", { partitions: names(tps) });
  },
  onPartitionsRevoked: (tps) => {
    emit("revoked", { partitions: names(tps) });
  },
  onPartitionsLost: (tps) => {
    emit("lost", { partitions: names(tps) });
  },
});

let stopping = false;
const stop = (): void => {
  stopping = true;
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);

let last = "";
while (!stopping) {
  const records = await consumer.poll({
    timeoutMs: 200,
    ...(values["max-poll-records"] ? { maxPollRecords: Number(values["max-poll-records"]) } : {}),
  });
  if (values["print-records"])
    for (const r of records)
      emit("record", {
        tp: `${r.topic}-${r.partition}`,
        offset: String(r.offset),
        value: r.value?.toString() ?? "",
      });
  // Slow processing only once it owns partitions: a member that leaves before it owned anything
  // has nothing to lose, and a test waiting for "lost" would wait for a lucky timing.
  if (values["poll-delay-ms"] && consumer.assignment().length > 0)
    await new Promise((r) => setTimeout(r, Number(values["poll-delay-ms"])));
  const now = JSON.stringify([names(consumer.assignment()), consumer.groupMetadata().generationId]);
  if (now !== last) {
    last = now;
    report();
  }
}
await consumer.close();
emit("closed");
process.exit(0);

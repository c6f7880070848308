// tern txn list|describe|describe-producers|find-hanging|abort (kafka-transactions.sh).
import type { Command } from "commander";
import { Admin, type TransactionStateName } from "../../libs/client/index.js";
import {
  EXIT_CLUSTER_ERROR,
  parseBigIntArg,
  parseIntArg,
  printJson,
  printTable,
  UsageError,
} from "../output.js";
import { globals, withAdmin } from "./context.js";

const STATES: readonly TransactionStateName[] = [
  "EMPTY",
  "ONGOING",
  "PREPARE_COMMIT",
  "PREPARE_ABORT",
  "COMPLETE_COMMIT",
  "COMPLETE_ABORT",
];

function since(ms: number): string {
  return ms > 0 ? new Date(ms).toISOString() : "-";
}

export function registerTxn(program: Command): void {
  const txn = program.command("txn").description("inspect and repair transactions");

  txn
    .command("list")
    .description("transactions on every coordinator")
    .option("--state <state...>", `only these states (${STATES.join(", ")})`)
    .option("--producer-id <id...>", "only these producer ids")
    .option("--duration-ms <ms>", "only transactions open at least this long")
    .action((o: { state?: string[]; producerId?: string[]; durationMs?: string }, cmd: Command) =>
      withAdmin(globals(cmd), async (admin, json) => {
        const states = (o.state ?? []).map((s) => s.toUpperCase());
        for (const s of states)
          if (!STATES.includes(s as TransactionStateName))
            throw new UsageError(`unknown state ${s}`);
        const r = await admin.listTransactions({
          states: states as TransactionStateName[],
          producerIds: (o.producerId ?? []).map((p) => parseBigIntArg(p, "--producer-id")),
          ...(o.durationMs ? { durationMs: parseIntArg(o.durationMs, "--duration-ms") } : {}),
        });
        if (json) return printJson(r);
        printTable(
          ["TRANSACTIONAL_ID", "PRODUCER_ID", "STATE", "PARTITION", "STARTED", "COORDINATOR"],
          r.transactions.map((t) => [
            t.transactionalId,
            t.producerId,
            t.state,
            t.partition,
            since(t.startTimeMs),
            t.coordinator,
          ]),
        );
        if (r.unavailablePartitions.length > 0)
          process.stderr.write(
            `unavailable __transaction_state partitions: ${r.unavailablePartitions.join(",")}\n`,
          );
      }),
    );

  txn
    .command("describe <transactionalIds...>")
    .description("full state of transactional ids")
    .action((ids: string[], _o: unknown, cmd: Command) =>
      withAdmin(globals(cmd), async (admin, json) => {
        const r = await admin.describeTransactions(ids);
        if (json) printJson(r);
        else
          printTable(
            [
              "TRANSACTIONAL_ID",
              "STATE",
              "PRODUCER_ID",
              "EPOCH",
              "TIMEOUT_MS",
              "STARTED",
              "PARTITIONS",
              "PENDING_MARKERS",
              "COORD_EPOCH",
              "ERROR",
            ],
            r.map((d) => [
              d.transactionalId,
              d.state,
              d.producerId,
              d.producerEpoch,
              d.transactionTimeoutMs,
              since(d.transactionStartTimeMs),
              d.partitions.map((p) => `${p.topic}-${p.partition}`).join(","),
              d.pendingMarkerPartitions.map((p) => `${p.topic}-${p.partition}`).join(","),
              d.coordinatorEpoch,
              d.error ?? "",
            ]),
          );
        if (r.some((d) => d.error)) process.exitCode = EXIT_CLUSTER_ERROR;
      }),
    );

  txn
    .command("describe-producers")
    .description("producer state of partitions")
    .requiredOption("--topic <topic>", "topic")
    .option("--partition <n>", "one partition (default all)")
    .action((o: { topic: string; partition?: string }, cmd: Command) =>
      withAdmin(globals(cmd), async (admin, json) => {
        let parts: number[];
        if (o.partition !== undefined) parts = [parseIntArg(o.partition, "--partition")];
        else {
          const [d] = await admin.describeTopics([o.topic]);
          if (d?.error) throw d.error;
          parts = d!.topic!.partitions.map((p) => p.partition);
        }
        const r = await admin.describeProducers(
          parts.map((partition) => ({ topic: o.topic, partition })),
        );
        if (json) printJson(r);
        else
          printTable(
            [
              "TOPIC",
              "PARTITION",
              "PRODUCER_ID",
              "EPOCH",
              "LAST_SEQUENCE",
              "LAST_TIMESTAMP",
              "COORD_EPOCH",
              "TXN_START_OFFSET",
              "ERROR",
            ],
            r.flatMap((p) =>
              p.error
                ? [[p.topic, p.partition, "", "", "", "", "", "", p.error]]
                : p.producers.map((s) => [
                    p.topic,
                    p.partition,
                    s.producerId,
                    s.producerEpoch,
                    s.lastSequence,
                    since(s.lastTimestampMs),
                    s.coordinatorEpoch,
                    s.currentTxnStartOffset,
                    "",
                  ]),
            ),
          );
        if (r.some((p) => p.error)) process.exitCode = EXIT_CLUSTER_ERROR;
      }),
    );

  txn
    .command("find-hanging")
    .description("open transactions older than a bound that their coordinator no longer tracks")
    .option(
      "--max-transaction-timeout-ms <ms>",
      "candidates: transactions open longer than this (default: the broker's, 900000)",
    )
    .option("--topic <topic>", "only this topic's partitions")
    .action((o: { maxTransactionTimeoutMs?: string; topic?: string }, cmd: Command) =>
      withAdmin(globals(cmd), async (admin, json) => {
        let partitions: Array<{ topic: string; partition: number }> | undefined;
        if (o.topic) {
          const [d] = await admin.describeTopics([o.topic]);
          if (d?.error) throw d.error;
          partitions = d!.topic!.partitions.map((p) => ({
            topic: o.topic!,
            partition: p.partition,
          }));
        }
        const r = await admin.findHangingTransactions({
          ...(o.maxTransactionTimeoutMs
            ? {
                maxTransactionTimeoutMs: parseIntArg(
                  o.maxTransactionTimeoutMs,
                  "--max-transaction-timeout-ms",
                ),
              }
            : {}),
          ...(partitions ? { partitions } : {}),
        });
        if (json) return printJson(r);
        printTable(
          [
            "TOPIC",
            "PARTITION",
            "PRODUCER_ID",
            "EPOCH",
            "COORD_EPOCH",
            "START_OFFSET",
            "OPEN_MS",
            "TRANSACTIONAL_ID",
            "BROKER",
            "WHY",
          ],
          r.map((h) => [
            h.topic,
            h.partition,
            h.producerId,
            h.producerEpoch,
            h.coordinatorEpoch,
            h.startOffset,
            h.openMs,
            h.transactionalId ?? "-",
            h.broker,
            h.reason,
          ]),
        );
      }),
    );

  txn
    .command("abort")
    .description(
      "abort a transaction: by --transactional-id, or one partition's hanging transaction",
    )
    .option(
      "--transactional-id <id>",
      "abort the open transaction of this id (fences its producer)",
    )
    .option("--topic <topic>", "partition abort: topic")
    .option("--partition <n>", "partition abort: partition")
    .option(
      "--start-offset <offset>",
      "partition abort: the transaction that starts at this offset (its producer is looked up)",
    )
    .option("--producer-id <id>", "partition abort: producer id")
    .option("--producer-epoch <n>", "partition abort: producer epoch")
    .option("--coordinator-epoch <n>", "partition abort: coordinator epoch", "0")
    .option(
      "--force",
      "partition abort: skip the check that no coordinator still tracks the transaction on the partition",
    )
    .action(
      (
        o: {
          transactionalId?: string;
          topic?: string;
          partition?: string;
          startOffset?: string;
          producerId?: string;
          producerEpoch?: string;
          coordinatorEpoch: string;
          force?: boolean;
        },
        cmd: Command,
      ) =>
        withAdmin(globals(cmd), async (admin, json) => {
          if (o.transactionalId) {
            if (
              o.topic !== undefined ||
              o.partition !== undefined ||
              o.startOffset !== undefined ||
              o.producerId !== undefined
            )
              throw new UsageError("--transactional-id takes no partition options");
            const state = await admin.abortTransaction(o.transactionalId);
            if (json) printJson({ transactionalId: o.transactionalId, state });
            else process.stdout.write(`aborted ${o.transactionalId}: ${state}\n`);
            return;
          }
          if (!o.topic || o.partition === undefined) {
            throw new UsageError(
              "give --transactional-id, or --topic and --partition with --start-offset (or --producer-id and --producer-epoch)",
            );
          }
          const tp = { topic: o.topic, partition: parseIntArg(o.partition, "--partition") };
          let target: Parameters<Admin["abortHangingTransaction"]>[0];
          if (o.startOffset !== undefined) {
            if (o.producerId !== undefined || o.producerEpoch !== undefined)
              throw new UsageError(
                "give --start-offset or --producer-id/--producer-epoch, not both",
              );
            target = { ...tp, startOffset: parseBigIntArg(o.startOffset, "--start-offset") };
          } else if (o.producerId !== undefined && o.producerEpoch !== undefined) {
            target = {
              ...tp,
              producerId: parseBigIntArg(o.producerId, "--producer-id"),
              producerEpoch: parseIntArg(o.producerEpoch, "--producer-epoch"),
              coordinatorEpoch: parseIntArg(o.coordinatorEpoch, "--coordinator-epoch"),
            };
          } else {
            throw new UsageError(
              "a partition abort needs --start-offset, or --producer-id and --producer-epoch",
            );
          }
          const spec = await admin.abortHangingTransaction(target, { force: o.force === true });
          if (json) printJson({ ...spec, aborted: true });
          else
            process.stdout.write(
              `wrote ABORT marker for producer ${spec.producerId} (epoch ${spec.producerEpoch}) on ${spec.topic}-${spec.partition}\n`,
            );
        }),
    );
}

// Producer administration: DescribeProducers, ListHangingTransactions and the admin abort of
// a hanging transaction (an ABORT marker written with the given epochs).
import type { Clock } from "../../libs/runtime/clock.js";
import { TernError } from "../../libs/common/errors.js";
import { BROKER_LIMITS } from "./broker-limits.js";
import type { LocalPartition, PartitionDirectory } from "./local-partition.js";
import type { PartitionService } from "./partition-service/partition-service.js";
import { eachLeaderPartition } from "./leader-partitions.js";
import { errorFields, int32, int64 } from "./wire.js";
import type {
  AbortPartitionTransactionRequest__Output,
  AbortPartitionTransactionResponse__Output,
  DescribeProducersRequest__Output,
  DescribeProducersResponse__Output,
  HangingTransaction__Output,
  ListHangingTransactionsRequest__Output,
  ListHangingTransactionsResponse__Output,
} from "../../libs/common/proto-types/index.js";

export function createDescribeProducersHandler(deps: {
  directory: PartitionDirectory;
}): (request: DescribeProducersRequest__Output) => Promise<DescribeProducersResponse__Output> {
  return async (request) => ({
    partitions: eachLeaderPartition(
      deps.directory,
      request?.partitions,
      (found, topic, partition) => {
        const producers =
          found.local?.stateMachine.describeProducers().map((p) => ({
            producerId: p.producerId.toString(),
            producerEpoch: p.producerEpoch,
            lastSequence: p.lastSequence,
            lastTimestampMs: String(p.lastTimestampMs),
            coordinatorEpoch: p.coordinatorEpoch,
            currentTxnStartOffset: p.currentTxnStartOffset.toString(),
            currentTxnStartTimeMs: String(p.currentTxnStartTimeMs),
          })) ?? [];
        return { topic, partition, ...errorFields(found.error), producers, leader: found.leader };
      },
    ),
  });
}

export function createListHangingHandler(deps: {
  directory: PartitionDirectory;
  clock: Clock;
}): (
  request: ListHangingTransactionsRequest__Output,
) => Promise<ListHangingTransactionsResponse__Output> {
  return async (request) => {
    const requested = Array.isArray(request?.partitions) ? request.partitions : [];
    const boundRaw = Number(int64(request?.maxTransactionTimeoutMs, "max_transaction_timeout_ms"));
    const boundMs = boundRaw > 0 ? boundRaw : BROKER_LIMITS.hangingTransactionMsDefault;
    const locals: LocalPartition[] =
      requested.length === 0
        ? [...deps.directory.locals()].filter((l) => l.group.isLeader())
        : requested
            .map((tp) => deps.directory.local(String(tp?.topic ?? ""), int32(tp?.partition, -1)))
            .filter((l): l is LocalPartition => l !== undefined && l.group.isLeader());
    const nowMs = deps.clock.nowMs();
    const transactions: HangingTransaction__Output[] = [];
    for (const local of locals) {
      for (const p of local.stateMachine.describeProducers()) {
        if (p.currentTxnStartOffset < 0n) continue;
        const openMs = nowMs - p.currentTxnStartTimeMs;
        if (openMs <= boundMs) continue;
        transactions.push({
          topicPartition: { topic: local.topic, partition: local.partition },
          producerId: p.producerId.toString(),
          producerEpoch: p.producerEpoch,
          coordinatorEpoch: p.coordinatorEpoch,
          startOffset: p.currentTxnStartOffset.toString(),
          startTimeMs: String(p.currentTxnStartTimeMs),
          openMs: String(openMs),
        });
      }
    }
    return { transactions };
  };
}

export function createAbortPartitionTransactionHandler(
  service: Pick<PartitionService, "writeMarker">,
): (
  request: AbortPartitionTransactionRequest__Output,
) => Promise<AbortPartitionTransactionResponse__Output> {
  return async (request) => {
    const topic = String(request?.topicPartition?.topic ?? "");
    const partition = int32(request?.topicPartition?.partition, -1);
    const producerId = int64(request?.producerId, "producer_id");
    if (producerId < 0n)
      throw new TernError("INVALID_REQUEST", `producer_id ${producerId} is negative`);
    const outcome = await service.writeMarker(topic, partition, {
      producerId,
      producerEpoch: int32(request?.producerEpoch),
      coordinatorEpoch: int32(request?.coordinatorEpoch),
      controlType: "ABORT",
      transactionalId: "",
      // An operator's abort of a hanging transaction carries the producer's own epoch.
      epochBumped: false,
    });
    return { ...errorFields(outcome.error, outcome.message), leader: outcome.leader ?? null };
  };
}

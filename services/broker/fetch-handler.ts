// The gRPC Fetch handler: an adapter over the partition service's reads
// (partition-service/read.ts). Each batch is answered as its stored v2 bytes (kafka_batch;
// markers as control batches under read_uncommitted) or, with decode_records, as proto records.
// A cancelled call ends the long poll.
import type * as grpc from "@grpc/grpc-js";
import type { ReadOptions } from "./partition-state-machine.js";
import type { PartitionService } from "./partition-service/partition-service.js";
import type { PartitionRead } from "./partition-service/read.js";
import type { WireBatch } from "./fetch-codec.js";
import { batchToWire, errorFields, int32, int64, parseIsolation } from "./wire.js";
import type {
  FetchPartitionResult__Output,
  FetchRequest__Output,
  FetchResponse,
} from "../../libs/common/proto-types/index.js";

type FetchCall = grpc.ServerUnaryCall<FetchRequest__Output, FetchResponse>;
/** The answer: every partition field set; its batches are WireBatch (written by fetch-codec.ts). */
export type FetchHandlerResponse = {
  partitions: Array<Omit<FetchPartitionResult__Output, "batches"> & { batches: WireBatch[] }>;
};

export function createFetchHandler(
  service: Pick<PartitionService, "fetch">,
): (request: FetchRequest__Output, call?: FetchCall) => Promise<FetchHandlerResponse> {
  return async (request, call) => {
    const rawItems = Array.isArray(request?.partitions) ? request.partitions : [];
    const partitions = rawItems.map((p) => ({
      topic: String(p?.topic ?? ""),
      partition: int32(p?.partition, -1),
      fetchOffset: int64(p?.fetchOffset, "fetch_offset"),
      partitionMaxBytes: int32(p?.partitionMaxBytes),
    }));
    const isolation = parseIsolation(request?.isolationLevel);
    // Every batch as v2 bytes (markers as control batches under read_uncommitted) unless the
    // client asks for decoded records.
    const asKafkaBatch = request?.decodeRecords !== true;
    const options: ReadOptions = { storedBatches: asKafkaBatch, controlBatches: asKafkaBatch };
    const cancel = new AbortController();
    const onCancelled = (): void => cancel.abort();
    if (call?.cancelled === true) cancel.abort();
    call?.on("cancelled", onCancelled);
    try {
      const reads = await service.fetch({
        partitions,
        isolation,
        options,
        maxWaitMs: int32(request?.maxWaitMs),
        minBytes: int32(request?.minBytes),
        maxBytes: int32(request?.maxBytes),
        signal: cancel.signal,
      });
      return { partitions: reads.map((r) => toWire(r, asKafkaBatch)) };
    } finally {
      call?.removeListener("cancelled", onCancelled);
    }
  };
}

function toWire(
  a: PartitionRead,
  asKafkaBatch: boolean,
): FetchHandlerResponse["partitions"][number] {
  const r = a.read;
  return {
    topic: a.topic,
    partition: a.partition,
    ...errorFields(a.error, a.message),
    highWatermark: (r?.highWatermark ?? -1n).toString(),
    lastStableOffset: (r?.lastStableOffset ?? -1n).toString(),
    logStartOffset: (r?.logStartOffset ?? -1n).toString(),
    batches: a.error === "NONE" && r ? r.batches.map((b) => batchToWire(b, asKafkaBatch)) : [],
    nextFetchOffset: (a.error === "NONE" && r ? r.nextFetchOffset : a.fetchOffset).toString(),
    leader: a.leader ?? null,
  };
}

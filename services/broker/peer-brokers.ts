// A broker's calls to its peer brokers, through the process's transport: the latest offsets of
// partitions (the catch-up gate's ListOffsets), their log end offsets for the consumer-lag
// gauges, and ReadReplicaRecords (segment repair). Failures reject with a TernError.
import { fromGrpcError } from "../../libs/common/grpc-errors.js";
import type { ReadReplicaRecordsRequest } from "../../libs/common/proto-types/index.js";
import type { ResponseOf, ServiceTransport } from "../../libs/runtime/transport.js";
import { partitionKey } from "./catch-up-gate.js";
import type { ReplicaRecordsAnswer } from "./segment-repair.js";

/** The catch-up gate's ListOffsets(latest) of one peer. */
const LIST_LATEST_DEADLINE_MS = 2_000;
/** One ReadReplicaRecords call (at most 4 MiB of records, read from the peer's files). */
const READ_REPLICA_RECORDS_DEADLINE_MS = 30_000;

type TopicPartition = { readonly topic: string; readonly partition: number };

export class PeerBrokers {
  constructor(private readonly transport: ServiceTransport) {}

  /** ListOffsets(latest) of the peer at `address`: "topic/partition" → offset, for the partitions it answered. */
  async listLatest(
    address: string,
    partitions: ReadonlyArray<TopicPartition>,
  ): Promise<Map<string, bigint>> {
    const res = await this.listOffsets(address, partitions, LIST_LATEST_DEADLINE_MS);
    const out = new Map<string, bigint>();
    for (const p of res.partitions ?? [])
      if (!p.errorCode || p.errorCode === "NONE")
        out.set(partitionKey(String(p.topic), Number(p.partition)), BigInt(p.offset));
    return out;
  }

  /** Log end offsets (high watermarks) of the peer's partitions; null where it refused. */
  async listEndOffsets(
    address: string,
    partitions: ReadonlyArray<TopicPartition>,
    timeoutMs: number,
  ): Promise<Array<{ topic: string; partition: number; offset: bigint | null }>> {
    const res = await this.listOffsets(address, partitions, timeoutMs);
    return (res.partitions ?? []).map((p) => ({
      topic: String(p.topic),
      partition: Number(p.partition),
      offset: p.errorCode === "NONE" ? BigInt(p.offset) : null,
    }));
  }

  /** ReadReplicaRecords from a peer (segment repair); a whole-call failure rejects. */
  async readReplicaRecords(
    address: string,
    request: ReadReplicaRecordsRequest,
  ): Promise<ReplicaRecordsAnswer> {
    const res = await this.transport
      .unary("Broker", address, "ReadReplicaRecords", request, {
        timeoutMs: READ_REPLICA_RECORDS_DEADLINE_MS,
      })
      .catch(rethrowAsTernError);
    return {
      errorCode: String(res.errorCode ?? "NONE"),
      errorMessage: String(res.errorMessage ?? ""),
      records: res.records ?? Buffer.alloc(0),
      lastIndex: String(res.lastIndex ?? "0"),
    };
  }

  private listOffsets(
    address: string,
    partitions: ReadonlyArray<TopicPartition>,
    timeoutMs: number,
  ): Promise<ResponseOf<"Broker", "ListOffsets">> {
    return this.transport
      .unary(
        "Broker",
        address,
        "ListOffsets",
        {
          isolationLevel: "READ_UNCOMMITTED",
          partitions: partitions.map((p) => ({
            topic: p.topic,
            partition: p.partition,
            timestampMs: "-1",
          })),
        },
        { timeoutMs },
      )
      .catch(rethrowAsTernError);
  }
}

function rethrowAsTernError(e: unknown): never {
  throw fromGrpcError(e);
}

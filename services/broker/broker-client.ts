// A thin promise wrapper over the tern.v1.Broker gRPC client, for tests, benchmarks and tools
// (the full SDK lives in libs/client). Leader routing is the caller's business.
import { fromGrpcError } from "../../libs/common/grpc-errors.js";
import { loadTernProto } from "../../libs/common/proto.js";
import { GrpcClientCache } from "../../libs/grpc/grpc-client-cache.js";
import type {
  BrokerClient as BrokerStub,
  FetchRequest,
  FetchResponse__Output,
  ListOffsetsRequest,
  ListOffsetsResponse__Output,
  ProduceRequest,
  ProduceResponse__Output,
} from "../../libs/common/proto-types/index.js";
import { unaryCall, type RequestOf, type ResponseOf } from "../../libs/grpc/unary-call.js";
import { processCredentials } from "../../libs/server/tls/credentials.js";
import { grpcDeadline } from "../../libs/grpc/grpc-service-transport.js";

const DEADLINE_MS_DEFAULT = 30_000;

type BrokerMethod =
  | "Produce"
  | "Fetch"
  | "ListOffsets"
  | "WriteTxnMarkers"
  | "DescribeProducers"
  | "ListHangingTransactions"
  | "AbortPartitionTransaction"
  | "ReadReplicaRecords";

export class BrokerClient {
  private readonly client: BrokerStub;
  /** Set when this wrapper made its own channel (no shared cache given): close() closes it. */
  private readonly own: GrpcClientCache | undefined;

  /** `clients`: the cache to take the channel from (its owner closes it); default a channel of its own. */
  constructor(
    readonly address: string,
    clients?: GrpcClientCache,
  ) {
    const Ctor = loadTernProto().grpc.tern.v1.Broker;
    // The cache's options (the one table) raise the HTTP/2 receive window (at the 64 KiB default
    // a 16 MiB fetch answer waits for ~256 WINDOW_UPDATE round trips) and carry the one message bound.
    this.own =
      clients === undefined
        ? new GrpcClientCache({ credentials: processCredentials(), clientsMax: 1 })
        : undefined;
    this.client = (clients ?? this.own!).get<BrokerStub>("Broker", Ctor, address);
  }

  call<M extends BrokerMethod>(
    method: M,
    request: RequestOf<BrokerStub, M>,
    deadlineMs = DEADLINE_MS_DEFAULT,
  ): Promise<ResponseOf<BrokerStub, M>> {
    return unaryCall(this.client, method, request, { deadline: grpcDeadline(deadlineMs) }).catch(
      (err: unknown) => {
        throw fromGrpcError(err);
      },
    );
  }

  produce(request: ProduceRequest, deadlineMs?: number): Promise<ProduceResponse__Output> {
    return this.call("Produce", request, deadlineMs);
  }
  /** Records come as proto records unless the request says decodeRecords: false (then as kafka_batch). */
  fetch(request: FetchRequest, deadlineMs?: number): Promise<FetchResponse__Output> {
    return this.call("Fetch", { decodeRecords: true, ...request }, deadlineMs);
  }
  listOffsets(
    request: ListOffsetsRequest,
    deadlineMs?: number,
  ): Promise<ListOffsetsResponse__Output> {
    return this.call("ListOffsets", request, deadlineMs);
  }

  close(): void {
    this.own?.close();
  }
}

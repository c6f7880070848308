// A thin promise wrapper over the tern.v1.Broker gRPC client, for tests, benchmarks and tools
// (the full SDK lives in libs/client). Leader routing is the caller's business.
import { fromGrpcError } from "../../libs/common/grpc-errors.js";
import { loadTernProto } from "../../libs/common/proto.js";
import type {
  BrokerClient as BrokerStub, FetchRequest, FetchResponse__Output, ListOffsetsRequest, ListOffsetsResponse__Output, ProduceRequest, ProduceResponse__Output,
} from "../../libs/common/proto-types/index.js";
import { GRPC_CLIENT_OPTIONS } from "../../libs/server/grpc-options.js";
import { channelCredentials } from "../../libs/server/tls/credentials.js";
import { unaryCall, type RequestOf, type ResponseOf } from "../../libs/server/unary-call.js";

const DEADLINE_MS_DEFAULT = 30_000;

type BrokerMethod = "Produce" | "Fetch" | "ListOffsets" | "WriteTxnMarkers" | "DescribeProducers" | "ListHangingTransactions" | "AbortPartitionTransaction";

export class BrokerClient {
  private readonly client: BrokerStub;

  constructor(readonly address: string) {
    const Ctor = loadTernProto().grpc.tern.v1.Broker;
    // The shared options raise the HTTP/2 receive window (at the 64 KiB default a 16 MiB fetch
    // answer waits for ~256 WINDOW_UPDATE round trips) and carry the one message bound.
    this.client = new Ctor(address, channelCredentials(), GRPC_CLIENT_OPTIONS);
  }

  call<M extends BrokerMethod>(method: M, request: RequestOf<BrokerStub, M>, deadlineMs = DEADLINE_MS_DEFAULT): Promise<ResponseOf<BrokerStub, M>> {
    return unaryCall(this.client, method, request, { deadline: Date.now() + deadlineMs }).catch((err: unknown) => {
      throw fromGrpcError(err);
    });
  }

  produce(request: ProduceRequest, deadlineMs?: number): Promise<ProduceResponse__Output> { return this.call("Produce", request, deadlineMs); }
  fetch(request: FetchRequest, deadlineMs?: number): Promise<FetchResponse__Output> { return this.call("Fetch", request, deadlineMs); }
  listOffsets(request: ListOffsetsRequest, deadlineMs?: number): Promise<ListOffsetsResponse__Output> { return this.call("ListOffsets", request, deadlineMs); }

  close(): void {
    this.client.close();
  }
}

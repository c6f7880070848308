// A thin promise wrapper over the tern.v1.Broker gRPC client, for tests, benchmarks and tools
// (the full SDK lives in libs/client). Leader routing is the caller's business.
import * as grpc from "@grpc/grpc-js";
import { fromGrpcError } from "../../libs/common/grpc-errors.js";
import { loadTernProto } from "../../libs/common/proto.js";
import { GRPC_CLIENT_OPTIONS } from "../../libs/server/grpc-options.js";
import { channelCredentials } from "../../libs/server/tls/credentials.js";

const DEADLINE_MS_DEFAULT = 30_000;

export class BrokerClient {
  private readonly client: any;

  constructor(readonly address: string) {
    const Ctor = loadTernProto().grpc.tern.v1.Broker as typeof grpc.Client;
    // The shared options raise the HTTP/2 receive window (at the 64 KiB default a 16 MiB fetch
    // answer waits for ~256 WINDOW_UPDATE round trips) and carry the one message bound.
    this.client = new Ctor(address, channelCredentials(), GRPC_CLIENT_OPTIONS);
  }

  call<R = any>(method: "Produce" | "Fetch" | "ListOffsets" | "WriteTxnMarkers" | "DescribeProducers" | "ListHangingTransactions" | "AbortPartitionTransaction", request: unknown, deadlineMs = DEADLINE_MS_DEFAULT): Promise<R> {
    return new Promise((resolve, reject) => {
      this.client[method](request, { deadline: Date.now() + deadlineMs }, (err: unknown, response: R) => (err ? reject(fromGrpcError(err)) : resolve(response)));
    });
  }

  produce(request: unknown, deadlineMs?: number): Promise<any> { return this.call("Produce", request, deadlineMs); }
  fetch(request: unknown, deadlineMs?: number): Promise<any> { return this.call("Fetch", request, deadlineMs); }
  listOffsets(request: unknown, deadlineMs?: number): Promise<any> { return this.call("ListOffsets", request, deadlineMs); }

  close(): void {
    this.client.close();
  }
}

// A thin promise wrapper over the tern.v1.Broker gRPC client, for tests, benchmarks and tools
// (the full SDK lives in libs/client). Leader routing is the caller's business.
import * as grpc from "@grpc/grpc-js";
import { fromGrpcError } from "../../libs/common/grpc-errors.js";
import { loadTernProto } from "../../libs/common/proto.js";
import { GrpcClientCache } from "../../libs/server/grpc-client-cache.js";

const DEADLINE_MS_DEFAULT = 30_000;

export class BrokerClient {
  private readonly client: any;
  /** Set when this wrapper made its own channel (no shared cache given): close() closes it. */
  private readonly own: GrpcClientCache | undefined;

  /** `clients`: the cache to take the channel from (its owner closes it); default a channel of its own. */
  constructor(readonly address: string, clients?: GrpcClientCache) {
    const Ctor = loadTernProto().grpc.tern.v1.Broker as typeof grpc.Client;
    // The cache's options (the one table) raise the HTTP/2 receive window (at the 64 KiB default
    // a 16 MiB fetch answer waits for ~256 WINDOW_UPDATE round trips) and carry the one message bound.
    this.own = clients === undefined ? new GrpcClientCache({ clientsMax: 1 }) : undefined;
    this.client = (clients ?? this.own!).get("Broker", Ctor, address);
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
    this.own?.close();
  }
}

// The seam between the client (Producer, Consumer, Admin) and the network: every call the
// client makes to a node's services goes through a Transport. The default, GrpcTransport, is
// grpc-js over the one client cache (libs/grpc/grpc-client-cache.ts); tests script a broker
// behind a fake one (libs/client/testing/scripted-broker.ts). Calls fail with TernError
// (libs/common/grpc-errors.ts), never with raw gRPC errors. Fetch is the one long poll: a unary
// call that the broker holds for up to its maxWaitMs.
import type { FetchResponse__Output } from "../../common/proto-types/index.js";
import type {
  ControllerClient,
  ControllerClientOptions,
} from "../../metadata/controller-client.js";
import type {
  MethodName,
  RequestOf,
  ResponseOf as GeneratedResponseOf,
} from "../../runtime/transport.js";
import type { FetchedPartition } from "../consumer/fetch-decoder.js";

/** The services a client calls on a node (the controller quorum goes through `controller()`). */
export type ServiceName = "Broker" | "TransactionCoordinator" | "GroupCoordinator";

export type { MethodName, RequestOf };

/** A Fetch answer whose records came through the hand-written decoder (fetch-decoder.ts). */
export type DecodedFetchResponse = Omit<FetchResponse__Output, "partitions"> & {
  partitions: FetchedPartition[];
};

/** What a call answers: the generated output type, a Fetch answer as fetch-decoder.ts reads it. */
export type ResponseOf<S extends ServiceName, M extends MethodName<S>> = [S, M] extends [
  "Broker",
  "Fetch",
]
  ? DecodedFetchResponse
  : GeneratedResponseOf<S, M>;

/** The controller quorum's calls (metadata and admin): ControllerClient's public surface. */
export type ControllerCalls = { [K in keyof ControllerClient]: ControllerClient[K] };

export const REQUEST_TIMEOUT_MS_DEFAULT = 30_000;

export interface Transport {
  /** One unary call to `service` at `address`, bounded by timeoutMs; rejects with TernError. */
  call<S extends ServiceName, M extends MethodName<S>>(
    service: S,
    address: string,
    method: M,
    request: RequestOf<S, M>,
    timeoutMs?: number,
  ): Promise<ResponseOf<S, M>>;
  /** A client of the controller quorum at these addresses; its close() leaves the transport open. */
  controller(options: ControllerClientOptions): ControllerCalls;
  /** Closes every channel; later calls reject with SHUTTING_DOWN. */
  close(): void;
}

// The seam between the client (Producer, Consumer, Admin) and the network: every call the
// client makes to a node's services goes through a Transport. The default, GrpcTransport, is
// grpc-js over the one client cache (libs/grpc/grpc-client-cache.ts); tests script a broker
// behind a fake one (libs/client/testing/scripted-broker.ts). Calls fail with TernError
// (libs/common/grpc-errors.ts), never with raw gRPC errors. Fetch is the one long poll: a unary
// call that the broker holds for up to its maxWaitMs.
import type { MethodDefinition } from "@grpc/proto-loader";
import type {
  BrokerDefinition,
  FetchResponse__Output,
  GroupCoordinatorDefinition,
  TransactionCoordinatorDefinition,
} from "../../common/proto-types/index.js";
import type {
  ControllerClient,
  ControllerClientOptions,
} from "../../metadata/controller-client.js";
import type { FetchedPartition } from "../consumer/fetch-decoder.js";

export type ServiceName = "Broker" | "TransactionCoordinator" | "GroupCoordinator";

interface ServiceDefinitions {
  Broker: BrokerDefinition;
  TransactionCoordinator: TransactionCoordinatorDefinition;
  GroupCoordinator: GroupCoordinatorDefinition;
}

/** The generated definitions without grpc.ServiceDefinition's string index. */
type KnownMethods<D> = {
  [K in keyof D as string extends K ? never : number extends K ? never : K]: D[K];
};

/** The methods of a service, by their proto names. */
export type MethodName<S extends ServiceName> = Extract<
  keyof KnownMethods<ServiceDefinitions[S]>,
  string
>;

type Definition<S extends ServiceName, M extends MethodName<S>> = KnownMethods<
  ServiceDefinitions[S]
>[M];

/** What a call sends (the generated input type: optional fields, strings for 64-bit ints). */
export type RequestOf<S extends ServiceName, M extends MethodName<S>> =
  Definition<S, M> extends MethodDefinition<infer Req, infer _Res, infer _ReqOut, infer _ResOut>
    ? Req
    : never;

/** A Fetch answer whose records came through the hand-written decoder (fetch-decoder.ts). */
export type DecodedFetchResponse = Omit<FetchResponse__Output, "partitions"> & {
  partitions: FetchedPartition[];
};

/** What a call answers (the generated output type: every field present). */
export type ResponseOf<S extends ServiceName, M extends MethodName<S>> = [S, M] extends [
  "Broker",
  "Fetch",
]
  ? DecodedFetchResponse
  : ResponseOutput<S, M>;
type ResponseOutput<S extends ServiceName, M extends MethodName<S>> =
  Definition<S, M> extends MethodDefinition<infer _Req, infer _Res, infer _ReqOut, infer ResOut>
    ? ResOut
    : never;

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

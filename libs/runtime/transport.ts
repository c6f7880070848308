// Calls between tern services: how a part of a process reaches another process's service. A
// unary call names the service, the peer's address, the method and the request, with a
// deadline, and resolves with the decoded answer or rejects with a status error: grpc-js's
// ServiceError shape (a numeric gRPC `code`, `details`, and the trailers in `metadata`), which
// libs/common/grpc-errors.ts maps to a TernError. A server stream (the controllers' metadata
// watch) delivers answers until it ends, fails or is cancelled. A process gets its transport
// from its runtime (process-runtime.ts): grpc-js in a real process
// (libs/grpc/grpc-service-transport.ts), a simulated network in the whole-system simulator.
import type { MethodDefinition } from "@grpc/proto-loader";
import type {
  BrokerDefinition,
  ControllerDefinition,
  GroupCoordinatorDefinition,
  TransactionCoordinatorDefinition,
} from "../common/proto-types/index.js";

/** The tern.v1 services one process calls on another. */
export interface ServiceDefinitions {
  Broker: BrokerDefinition;
  Controller: ControllerDefinition;
  GroupCoordinator: GroupCoordinatorDefinition;
  TransactionCoordinator: TransactionCoordinatorDefinition;
}
export type ServiceName = keyof ServiceDefinitions;

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

/** What a call answers (the generated output type: every field present). */
export type ResponseOf<S extends ServiceName, M extends MethodName<S>> =
  Definition<S, M> extends MethodDefinition<infer _Req, infer _Res, infer _ReqOut, infer ResOut>
    ? ResOut
    : never;

export interface CallOptions {
  /** How long the call may take from now; past it the call fails DEADLINE_EXCEEDED. */
  readonly timeoutMs: number;
  /** Request headers (gRPC metadata), e.g. who a forwarded admin request is on behalf of. */
  readonly headers?: Readonly<Record<string, string>>;
}

/** A failed call: grpc-js's ServiceError shape (what grpc-errors.ts's fromGrpcError reads). */
export interface StatusError extends Error {
  /** The gRPC status code (grpc.status). */
  readonly code: number;
  readonly details: string;
  /** The trailers: tern-error-code, a controller's leader hint. */
  readonly metadata: { get(key: string): ReadonlyArray<string | Buffer> };
}

export interface StreamHandlers<T> {
  onMessage(message: T): void;
  /** Once, when the stream is over: without an error when the server ended it. */
  onEnd(error?: unknown): void;
}

export interface ServiceTransport {
  /** One unary call to `service` at `address`; rejects with a StatusError. */
  unary<S extends ServiceName, M extends MethodName<S>>(
    service: S,
    address: string,
    method: M,
    request: RequestOf<S, M>,
    options: CallOptions,
  ): Promise<ResponseOf<S, M>>;
  /** Opens a server stream; returns its cancel (after which onEnd is called, at most once). */
  serverStream<S extends ServiceName, M extends MethodName<S>>(
    service: S,
    address: string,
    method: M,
    request: RequestOf<S, M>,
    handlers: StreamHandlers<ResponseOf<S, M>>,
  ): () => void;
}

// The transport between services (libs/runtime/transport.ts) in a real process: grpc-js over one
// bounded client cache (grpc-client-cache.ts). The generated client of each service, a deadline
// measured on the host's clock (grpcDeadline), headers as call metadata; failures reject with
// grpc-js's ServiceError as is (the StatusError shape).
import * as grpc from "@grpc/grpc-js";
import { loadTernProto } from "../common/proto.js";
import { controllerProto } from "../metadata/controller-proto.js";
import type {
  CallOptions,
  MethodName,
  RequestOf,
  ResponseOf,
  ServiceName,
  ServiceTransport,
  StreamHandlers,
} from "../runtime/transport.js";
import { GrpcClientCache, type GrpcClientConstructor } from "./grpc-client-cache.js";
import {
  clientChannelCredentials,
  type ChannelCredentialsSource,
  type PasswordCredentials,
} from "./client-credentials.js";

export interface GrpcServiceTransportOptions {
  /** What every channel presents: a process's certificate; default plaintext (tests, tools). */
  readonly credentials?: ChannelCredentialsSource;
  /** Clients kept open at most (default the cache's). */
  readonly clientsMax?: number;
  /** A user's password sent with every call (SDK clients; tern processes use certificates). */
  readonly password?: PasswordCredentials | undefined;
}

/** A cache shared with its owner (the SDK's transport), who closes it. */
export interface SharedCacheOptions {
  readonly clients: GrpcClientCache;
  readonly password?: PasswordCredentials | undefined;
}

type UnaryMethod = (
  request: unknown,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: (err: grpc.ServiceError | null, res: unknown) => void,
) => grpc.ClientUnaryCall;
type StreamMethod = (
  request: unknown,
  metadata: grpc.Metadata,
) => grpc.ClientReadableStream<unknown>;

/** The generated client constructor of a service; the controller's from controller.proto alone. */
function loadClient(service: ServiceName): GrpcClientConstructor {
  if (service === "Controller") return controllerProto().client;
  return loadTernProto().grpc.tern.v1[service] as unknown as GrpcClientConstructor;
}

export class GrpcServiceTransport implements ServiceTransport {
  private readonly clients: GrpcClientCache;
  private readonly ownsClients: boolean;
  private readonly password: PasswordCredentials | undefined;
  /** Each service's client constructor, resolved on its first call, not on every call. */
  private readonly constructors = new Map<ServiceName, GrpcClientConstructor>();

  /** Its own client cache from options, or a shared one (whose owner closes it). */
  constructor(options: GrpcServiceTransportOptions | SharedCacheOptions = {}) {
    this.password = options.password;
    if ("clients" in options) {
      this.clients = options.clients;
      this.ownsClients = false;
    } else {
      this.clients = new GrpcClientCache({
        credentials: options.credentials ?? clientChannelCredentials(undefined),
        ...(options.clientsMax === undefined ? {} : { clientsMax: options.clientsMax }),
      });
      this.ownsClients = true;
    }
  }

  unary<S extends ServiceName, M extends MethodName<S>>(
    service: S,
    address: string,
    method: M,
    request: RequestOf<S, M>,
    options: CallOptions,
  ): Promise<ResponseOf<S, M>> {
    let client: grpc.Client;
    try {
      client = this.clients.get(service, this.clientOf(service), address, this.password);
    } catch (e) {
      return Promise.reject(e);
    }
    const fn = (client as unknown as Record<string, UnaryMethod | undefined>)[method];
    if (typeof fn !== "function")
      return Promise.reject(new Error(`${service} has no method ${String(method)}`));
    return new Promise((resolve, reject) => {
      fn.call(
        client,
        request,
        headersOf(options.headers),
        { deadline: grpcDeadline(options.timeoutMs) },
        (err, res) => (err ? reject(err) : resolve(res as ResponseOf<S, M>)),
      );
    });
  }

  serverStream<S extends ServiceName, M extends MethodName<S>>(
    service: S,
    address: string,
    method: M,
    request: RequestOf<S, M>,
    handlers: StreamHandlers<ResponseOf<S, M>>,
  ): () => void {
    const client = this.clients.get(service, this.clientOf(service), address, this.password);
    const fn = (client as unknown as Record<string, StreamMethod>)[method]!;
    const stream = fn.call(client, request, new grpc.Metadata());
    let ended = false;
    const end = (error?: unknown): void => {
      if (ended) return;
      ended = true;
      handlers.onEnd(error);
    };
    stream.on("data", (message: unknown) => handlers.onMessage(message as ResponseOf<S, M>));
    stream.on("error", (e) => end(e));
    stream.on("end", () => end());
    return () => stream.cancel();
  }

  private clientOf(service: ServiceName): GrpcClientConstructor {
    let constructor = this.constructors.get(service);
    if (constructor === undefined)
      this.constructors.set(service, (constructor = loadClient(service)));
    return constructor;
  }

  /** Closes the channels it owns (a shared cache is its owner's to close). */
  close(): void {
    if (this.ownsClients) this.clients.close();
  }
}

// The deadline of a gRPC call. grpc-js takes an absolute time and measures it against the
// host's own Date.now(), so this reads the host's clock, not the process runtime's: an injected
// or skewed Clock (the chaos suite's clock-skew fault) would lengthen or cut every call.
export function grpcDeadline(timeoutMs: number): number {
  return Date.now() + timeoutMs;
}

function headersOf(headers: Readonly<Record<string, string>> | undefined): grpc.Metadata {
  const metadata = new grpc.Metadata();
  for (const [key, value] of Object.entries(headers ?? {})) metadata.set(key, value);
  return metadata;
}

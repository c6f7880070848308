// One grpc-js client per (service, address), with a raised HTTP/2 flow-control window and
// message limits, reused by every producer/consumer/admin call to that node. Calls return
// promises and fail with TernError (libs/common/grpc-errors.ts), never with raw gRPC errors.
import * as grpc from "@grpc/grpc-js";
import { TernError } from "../../common/errors.js";
import { ClientError } from "../errors.js";
import { fromGrpcError } from "../../common/grpc-errors.js";
import { GRPC_MESSAGE_BYTES_MAX } from "../../common/limits.js";
import { loadTernProto } from "../../common/proto.js";
import { brokerClientWithFetchDecoder } from "../consumer/fetch-decoder.js";
import { channelCredentials, type PasswordCredentials } from "../../server/tls/credentials.js";

export type ServiceName = "Broker" | "TransactionCoordinator" | "GroupCoordinator";

/** Bound on distinct (service, address) clients; the least recently created is closed beyond it. */
export const CONNECTIONS_MAX = 256;
/** The servers' message bound (libs/common/limits.ts): a Fetch answer may be that large. */
export const MESSAGE_BYTES_MAX = GRPC_MESSAGE_BYTES_MAX;
/** HTTP/2 window: the default 64 KiB throttles produce/fetch of large batches. */
export const FLOW_CONTROL_WINDOW_BYTES = 8 * 1024 * 1024;
export const REQUEST_TIMEOUT_MS_DEFAULT = 30_000;

export const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  "grpc.max_receive_message_length": MESSAGE_BYTES_MAX,
  "grpc.max_send_message_length": MESSAGE_BYTES_MAX,
  "grpc-node.flow_control_window": FLOW_CONTROL_WINDOW_BYTES,
  "grpc.keepalive_time_ms": 30_000,
  "grpc.initial_reconnect_backoff_ms": 100,
  "grpc.max_reconnect_backoff_ms": 1_000, // a restarted node or new leader is reached within 1 s
};

let brokerCtor: grpc.ServiceClientConstructor | undefined;

/** The client constructor of a service; the Broker's decodes Fetch answers by hand (fetch-decoder.ts). */
function serviceClient(service: ServiceName): grpc.ServiceClientConstructor {
  const proto = loadTernProto();
  // The generated constructor types omit ServiceClientConstructor's static serviceName (present at run time).
  if (service !== "Broker") return proto.grpc.tern.v1[service] as unknown as grpc.ServiceClientConstructor;
  brokerCtor ??= brokerClientWithFetchDecoder(proto.grpc.tern.v1.Broker as unknown as grpc.ServiceClientConstructor, proto.packageDefinition);
  return brokerCtor;
}

/** Fails at construction (not at the first call) when a password could not be sent: no TLS. */
export function checkCredentials(credentials: PasswordCredentials | undefined): void {
  if (credentials === undefined) return;
  try {
    channelCredentials(credentials);
  } catch (e) {
    throw new ClientError((e as Error).message, "fatal", "INVALID_CONFIG");
  }
}

export class ConnectionPool {
  private readonly clients = new Map<string, grpc.Client>();
  private closed = false;

  /** `credentials`: the user's password, sent with every call (over TLS only). */
  constructor(private readonly credentials?: PasswordCredentials | undefined) {}

  client(service: ServiceName, address: string): grpc.Client {
    if (this.closed) throw new TernError("SHUTTING_DOWN", "the connection pool is closed");
    const key = `${service}@${address}`;
    let c = this.clients.get(key);
    if (c) return c;
    if (this.clients.size >= CONNECTIONS_MAX) {
      const [oldestKey, oldest] = this.clients.entries().next().value as [string, grpc.Client];
      oldest.close();
      this.clients.delete(oldestKey);
    }
    const Ctor = serviceClient(service);
    c = new Ctor(address, channelCredentials(this.credentials), CHANNEL_OPTIONS);
    this.clients.set(key, c);
    return c;
  }

  call<R = any>(service: ServiceName, address: string, method: string, request: unknown, timeoutMs = REQUEST_TIMEOUT_MS_DEFAULT): Promise<R> {
    let c: any;
    try {
      c = this.client(service, address);
    } catch (e) {
      return Promise.reject(fromGrpcError(e));
    }
    return new Promise<R>((resolve, reject) => {
      c[method](request, { deadline: Date.now() + timeoutMs }, (err: unknown, res: R) => (err ? reject(fromGrpcError(err)) : resolve(res)));
    });
  }

  close(): void {
    this.closed = true;
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }
}

// The default Transport: grpc-js over the one bounded client cache (libs/grpc/grpc-client-cache.ts),
// whose channels carry the one options table (raised HTTP/2 window, the message bound, short
// reconnect backoff). One client per (service, address, credentials), reused by every call of
// a producer/consumer/admin to that node, the controller quorum's included.
import type * as grpc from "@grpc/grpc-js";
import { TernError } from "../../common/errors.js";
import { ClientError } from "../errors.js";
import { fromGrpcError } from "../../common/grpc-errors.js";
import { loadTernProto } from "../../common/proto.js";
import {
  ControllerClient,
  type ControllerClientOptions,
} from "../../metadata/controller-client.js";
import { GrpcClientCache, type GrpcClientConstructor } from "../../grpc/grpc-client-cache.js";
import {
  clientChannelCredentials,
  clientTlsFromEnv,
  openClientTls,
  type ChannelCredentialsSource,
  type ClientTlsFiles,
  type PasswordCredentials,
} from "../../grpc/client-credentials.js";
import { brokerClientWithFetchDecoder } from "../consumer/fetch-decoder.js";
import {
  REQUEST_TIMEOUT_MS_DEFAULT,
  type ControllerCalls,
  type MethodName,
  type RequestOf,
  type ResponseOf,
  type ServiceName,
  type Transport,
} from "./transport.js";

/** Bound on distinct (service, address) clients; the least recently used is closed beyond it. */
export const CONNECTIONS_MAX = 256;

let brokerCtor: grpc.ServiceClientConstructor | undefined;

/** The client constructor of a service; the Broker's decodes Fetch answers by hand (fetch-decoder.ts). */
function serviceClient(service: ServiceName): GrpcClientConstructor {
  const proto = loadTernProto();
  // The generated constructor types omit ServiceClientConstructor's static serviceName (present at run time).
  if (service !== "Broker")
    return proto.grpc.tern.v1[service] as unknown as grpc.ServiceClientConstructor;
  brokerCtor ??= brokerClientWithFetchDecoder(
    proto.grpc.tern.v1.Broker as unknown as grpc.ServiceClientConstructor,
    proto.packageDefinition,
  );
  return brokerCtor;
}

/** How one client's channels are secured; every Producer, Consumer and Admin takes these. */
export interface ClientSecurityOptions {
  /**
   * The cluster CA, and a client certificate and key for mutual TLS (PEM files, re-read when
   * they change). Default: TERN_TLS_CA_FILE [+ TERN_TLS_CERT_FILE/TERN_TLS_KEY_FILE] from the
   * environment when set, else plaintext.
   */
  readonly tls?: ClientTlsFiles;
  /**
   * A SCRAM user's name and password (`tern user create`), sent with every call; needs TLS.
   * Without it, the client certificate (if any) is the identity.
   */
  readonly credentials?: PasswordCredentials;
}

/**
 * The credentials of one client's channels. Fails at construction (not at the first call) when
 * the TLS files are unusable or a password could not be sent (no TLS).
 */
export function clientCredentialsOf(options: ClientSecurityOptions): ChannelCredentialsSource {
  try {
    const tls = options.tls !== undefined ? openClientTls(options.tls) : clientTlsFromEnv();
    const channels = clientChannelCredentials(tls);
    channels.channel(options.credentials);
    return channels;
  } catch (e) {
    throw new ClientError((e as Error).message, "fatal", "INVALID_CONFIG");
  }
}

type UnaryMethod = (
  request: unknown,
  options: grpc.CallOptions,
  callback: (err: grpc.ServiceError | null, res: unknown) => void,
) => grpc.ClientUnaryCall;

export class GrpcTransport implements Transport {
  private readonly clients: GrpcClientCache;
  private closed = false;

  /** `channels`: what every channel presents; `credentials`: the user's password, sent with every call. */
  constructor(
    channels: ChannelCredentialsSource,
    private readonly credentials?: PasswordCredentials | undefined,
  ) {
    this.clients = new GrpcClientCache({ credentials: channels, clientsMax: CONNECTIONS_MAX });
  }

  call<S extends ServiceName, M extends MethodName<S>>(
    service: S,
    address: string,
    method: M,
    request: RequestOf<S, M>,
    timeoutMs = REQUEST_TIMEOUT_MS_DEFAULT,
  ): Promise<ResponseOf<S, M>> {
    let fn: UnaryMethod;
    let client: grpc.Client;
    try {
      if (this.closed) throw new TernError("SHUTTING_DOWN", "the transport is closed");
      client = this.clients.get(service, serviceClient(service), address, this.credentials);
      fn = (client as unknown as Record<string, UnaryMethod>)[method]!;
    } catch (e) {
      return Promise.reject(fromGrpcError(e));
    }
    return new Promise((resolve, reject) => {
      fn.call(client, request, { deadline: Date.now() + timeoutMs }, (err, res) =>
        err ? reject(fromGrpcError(err)) : resolve(res as ResponseOf<S, M>),
      );
    });
  }

  controller(options: ControllerClientOptions): ControllerCalls {
    return new ControllerClient({
      credentials: this.credentials,
      ...options,
      clients: this.clients,
    });
  }

  close(): void {
    this.closed = true;
    this.clients.close();
  }
}

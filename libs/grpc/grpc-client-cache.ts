// The one cache of grpc-js clients: every outgoing channel to another tern process (the SDK's
// transport, a broker's calls to coordinators and peers, a coordinator's marker writes, the
// controller's forwarding, tools and tests) comes from one of these. Keyed by service, address
// and credentials; bounded by a count (the least recently used client is closed beyond it);
// every channel is built with the one options table (grpc-options.ts) and the credentials the
// cache's owner gives (client-credentials.ts), plus the caller's password when it gives one.
import type * as grpc from "@grpc/grpc-js";
import { GRPC_CLIENT_OPTIONS } from "./grpc-options.js";
import type { ChannelCredentialsSource, PasswordCredentials } from "./client-credentials.js";

/** Default bound on the clients one cache keeps open. */
export const GRPC_CLIENTS_MAX_DEFAULT = 256;

/** A client constructor: the generated service's, or one with a custom deserializer. */
export type GrpcClientConstructor = new (
  address: string,
  credentials: grpc.ChannelCredentials,
  options?: grpc.ChannelOptions,
) => grpc.Client;

export interface GrpcClientCacheOptions {
  /** What every channel of this cache presents (TLS or plaintext; a default password). */
  readonly credentials: ChannelCredentialsSource;
  /** Clients kept open at most (default GRPC_CLIENTS_MAX_DEFAULT). */
  readonly clientsMax?: number;
  /** Overrides of the table's client options (default GRPC_CLIENT_OPTIONS). */
  readonly channelOptions?: grpc.ChannelOptions;
}

export class GrpcClientCache {
  /** In least-recently-used order (a Map iterates in insertion order; a hit re-inserts). */
  private readonly clients = new Map<string, grpc.Client>();
  private readonly clientsMax: number;
  private readonly channelOptions: grpc.ChannelOptions;
  private readonly credentials: ChannelCredentialsSource;
  private closed = false;
  /** Distinct credential objects get distinct channels; the password never enters a key. */
  private readonly credentialIds = new WeakMap<PasswordCredentials, number>();
  private nextCredentialId = 1;

  constructor(options: GrpcClientCacheOptions) {
    this.credentials = options.credentials;
    this.clientsMax = options.clientsMax ?? GRPC_CLIENTS_MAX_DEFAULT;
    if (!Number.isInteger(this.clientsMax) || this.clientsMax < 1)
      throw new RangeError(`clientsMax must be a positive integer, got ${this.clientsMax}`);
    this.channelOptions = { ...GRPC_CLIENT_OPTIONS, ...options.channelOptions };
  }

  private credentialKey(credentials: PasswordCredentials | undefined): string {
    if (credentials === undefined) return "-";
    let id = this.credentialIds.get(credentials);
    if (id === undefined) this.credentialIds.set(credentials, (id = this.nextCredentialId++));
    return `${credentials.username}#${id}`;
  }

  get size(): number {
    return this.clients.size;
  }

  /**
   * The client of `service` at `address` (created on first use). `service` names the
   * constructor: one cache must always pass the same constructor for one service name.
   * Throws when the cache is closed, or when a password could not be sent (no TLS).
   */
  get<C extends grpc.Client = grpc.Client>(
    service: string,
    Ctor: GrpcClientConstructor,
    address: string,
    credentials?: PasswordCredentials,
  ): C {
    if (this.closed) throw new Error("the gRPC client cache is closed");
    const key = `${service}|${address}|${this.credentialKey(credentials)}`;
    const hit = this.clients.get(key);
    if (hit !== undefined) {
      this.clients.delete(key);
      this.clients.set(key, hit);
      return hit as C;
    }
    const client = new Ctor(address, this.credentials.channel(credentials), this.channelOptions);
    while (this.clients.size >= this.clientsMax) this.evictOldest();
    this.clients.set(key, client);
    return client as C;
  }

  /** Closes and forgets the clients of `address` (e.g. after a transport failure: a fresh channel connects at once). */
  drop(address: string): void {
    for (const [key, client] of this.clients) {
      if (key.split("|")[1] !== address) continue;
      client.close();
      this.clients.delete(key);
    }
  }

  /** Closes every client; later get() calls throw. */
  close(): void {
    this.closed = true;
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
  }

  private evictOldest(): void {
    const oldest = this.clients.entries().next().value;
    if (oldest === undefined) return;
    oldest[1].close();
    this.clients.delete(oldest[0]);
  }
}

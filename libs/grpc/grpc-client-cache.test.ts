// The one gRPC client cache: keyed by service, address and credentials, bounded (least
// recently used closed first), closed as a whole; channels carry the one options table.
import type * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { GrpcClientCache } from "./grpc-client-cache.js";
import { GRPC_CLIENT_OPTIONS } from "./grpc-options.js";
import { clientChannelCredentials } from "./client-credentials.js";

const plaintext = clientChannelCredentials(undefined);

class FakeClient {
  closed = false;
  constructor(
    readonly address: string,
    _credentials: grpc.ChannelCredentials,
    readonly options?: grpc.ChannelOptions,
  ) {}
  close(): void {
    this.closed = true;
  }
}
const Ctor = FakeClient as unknown as new (
  address: string,
  credentials: grpc.ChannelCredentials,
  options?: grpc.ChannelOptions,
) => grpc.Client;
const fake = (c: grpc.Client): FakeClient => c as unknown as FakeClient;

describe("GrpcClientCache", () => {
  it("reuses one client per service and address, with the table's client options", () => {
    const cache = new GrpcClientCache({ credentials: plaintext });
    const a = cache.get("Broker", Ctor, "h:1");
    expect(cache.get("Broker", Ctor, "h:1")).toBe(a);
    expect(cache.get("GroupCoordinator", Ctor, "h:1")).not.toBe(a);
    expect(cache.get("Broker", Ctor, "h:2")).not.toBe(a);
    expect(fake(a).options).toEqual(GRPC_CLIENT_OPTIONS);
    expect(cache.size).toBe(3);
  });

  it("closes the least recently used client beyond its bound", () => {
    const cache = new GrpcClientCache({ credentials: plaintext, clientsMax: 2 });
    const a = cache.get("Broker", Ctor, "a:1");
    const b = cache.get("Broker", Ctor, "b:1");
    cache.get("Broker", Ctor, "a:1"); // a is now the most recent
    const c = cache.get("Broker", Ctor, "c:1");
    expect(cache.size).toBe(2);
    expect(fake(b).closed).toBe(true);
    expect(fake(a).closed).toBe(false);
    expect(fake(c).closed).toBe(false);
  });

  it("drops an address's clients, and closes everything at close", () => {
    const cache = new GrpcClientCache({ credentials: plaintext });
    const a = cache.get("Broker", Ctor, "a:1");
    const b = cache.get("Broker", Ctor, "b:1");
    cache.drop("a:1");
    expect(fake(a).closed).toBe(true);
    expect(cache.get("Broker", Ctor, "a:1")).not.toBe(a);
    cache.close();
    expect(fake(b).closed).toBe(true);
    expect(() => cache.get("Broker", Ctor, "b:1")).toThrow(/closed/);
  });

  it("refuses a password without TLS, as the credentials module does", () => {
    const cache = new GrpcClientCache({ credentials: plaintext });
    expect(() => cache.get("Broker", Ctor, "a:1", { username: "u", password: "p" })).toThrow(
      /only sent over TLS/,
    );
  });
});

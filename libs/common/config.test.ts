import { describe, expect, it } from "vitest";
import { ConfigError, loadServiceConfig } from "./config.js";

describe("service config", () => {
  it("reads flags over environment over defaults", () => {
    const c = loadServiceConfig("broker", ["--node-id", "2", "--listen", "127.0.0.1:7000"], {
      TERN_LISTEN: "127.0.0.1:1",
      TERN_RACK: "a",
    });
    expect(c.nodeId).toBe(2);
    expect(c.listen).toEqual({ host: "127.0.0.1", port: 7000 });
    expect(c.advertise).toEqual(c.listen);
    expect(c.rack).toBe("a");
    expect(c.controllers).toEqual([{ id: 0, host: "127.0.0.1", port: 9090 }]);
    expect(c.kafkaSasl).toBe("off");
    expect(
      loadServiceConfig("broker", ["--node-id", "2"], { TERN_KAFKA_SASL: "required" }).kafkaSasl,
    ).toBe("required");
  });
  it("--grpc-authorizer: off by default, needs TLS, super-users default to the Kafka list", () => {
    expect(loadServiceConfig("controller", ["--node-id", "0"], {}).grpcAuthorizer).toBeUndefined();
    expect(() =>
      loadServiceConfig("controller", ["--node-id", "0", "--grpc-authorizer", "acl"], {}),
    ).toThrow(/--grpc-authorizer acl needs TLS/);
    expect(() =>
      loadServiceConfig("controller", ["--node-id", "0", "--grpc-authorizer", "yes"], {}),
    ).toThrow(/expected "acl" or "none"/);
    expect(() =>
      loadServiceConfig("controller", ["--node-id", "0", "--grpc-super-users", "admin"], {}),
    ).toThrow(/--grpc-super-users: "admin" is not User:<name>/);
  });
  it.each([
    [["--node-id", "1", "--bogus", "x"], /bogus/],
    [["--listen", "127.0.0.1:1"], /node-id/],
    [["--node-id", "x"], /integer/],
    [["--node-id", "1", "--controllers", "1@a:1,nonsense"], /id@host:port/],
    [["--node-id", "1", "--controllers", "1@a:1,1@b:2"], /duplicate/],
    [["--node-id", "1", "--listen", "host:99999"], /out of range/],
    [["--node-id", "1", "--heartbeat-interval-ms", "900"], /third/],
    [["--node-id", "1", "--kafka-sasl", "maybe"], /kafka-sasl/],
  ])("rejects %j", (argv, reason) => {
    expect(() => loadServiceConfig("controller", argv, {})).toThrow(ConfigError);
    expect(() => loadServiceConfig("controller", argv, {})).toThrow(reason);
  });
});

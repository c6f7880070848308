import { describe, expect, it } from "vitest";
import { ConfigError, loadServiceConfig } from "./config.js";

/** TLS flags: parsing checks their presence; the files are read when a service opens them. */
const TLS = ["--tls-cert-file", "a.crt", "--tls-key-file", "a.key", "--tls-ca-file", "ca.crt"];

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
      loadServiceConfig("broker", ["--node-id", "2", ...TLS], {
        TERN_KAFKA_SASL: "required",
        TERN_GRPC_AUTHORIZER: "acl",
      }).kafkaSasl,
    ).toBe("required");
  });
  it("--kafka-auto-create-topics: false by default, true or false only", () => {
    expect(loadServiceConfig("broker", ["--node-id", "1"], {}).kafkaAutoCreateTopics).toBe(false);
    expect(
      loadServiceConfig("broker", ["--node-id", "1"], { TERN_KAFKA_AUTO_CREATE_TOPICS: "true" })
        .kafkaAutoCreateTopics,
    ).toBe(true);
    expect(() =>
      loadServiceConfig("broker", ["--node-id", "1", "--kafka-auto-create-topics", "yes"], {}),
    ).toThrow(ConfigError);
  });
  it("--security acl: every listener authenticates and authorizes; needs TLS", () => {
    const c = loadServiceConfig(
      "broker",
      ["--node-id", "2", "--security", "acl", "--super-users", "User:admin", ...TLS],
      {},
    );
    expect(c.kafkaSasl).toBe("required");
    expect(c.kafkaAuthorizer).toEqual({ superUsers: ["User:admin"] });
    expect(c.grpcAuthorizer).toEqual({ superUsers: ["User:admin"] });
    expect(c.authenticationRequired).toBe(true);
    expect(loadServiceConfig("broker", ["--node-id", "2"], {}).authenticationRequired).toBe(false);
    expect(() => loadServiceConfig("broker", ["--node-id", "2", "--security", "acl"], {})).toThrow(
      /--security acl needs TLS/,
    );
  });
  it("a half-secured configuration is refused unless --allow-mixed-security true", () => {
    const kafkaOnly = ["--node-id", "2", "--kafka-sasl", "required", ...TLS];
    expect(() => loadServiceConfig("broker", kafkaOnly, {})).toThrow(
      /half-secured configuration: the Kafka listeners require authentication/,
    );
    // A controller has no Kafka listener of its own; the flags still describe the cluster's.
    expect(() => loadServiceConfig("controller", kafkaOnly, {})).toThrow(/half-secured/);
    const grpcOnly = ["--node-id", "2", "--grpc-authorizer", "acl", ...TLS];
    expect(() => loadServiceConfig("broker", grpcOnly, {})).toThrow(
      /half-secured configuration: the gRPC API requires authentication/,
    );
    expect(() =>
      loadServiceConfig(
        "broker",
        ["--node-id", "2", "--security", "acl", "--kafka-sasl", "off", ...TLS],
        {},
      ),
    ).toThrow(/half-secured/);
    const mixed = loadServiceConfig("broker", kafkaOnly, { TERN_ALLOW_MIXED_SECURITY: "true" });
    expect(mixed.authenticationRequired).toBe(true);
    expect(mixed.grpcAuthorizer).toBeUndefined();
  });
  it("SASL on the Kafka listeners needs TLS (the SCRAM keys travel over gRPC)", () => {
    expect(() =>
      loadServiceConfig("broker", ["--node-id", "2", "--kafka-sasl", "required"], {
        TERN_ALLOW_MIXED_SECURITY: "true",
      }),
    ).toThrow(/--kafka-sasl required needs TLS/);
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

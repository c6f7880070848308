// Which flag combinations turn TLS on, and the one-line reasons for the others.
import { describe, expect, it } from "vitest";
import { loadServiceConfig } from "./config.js";
import { parseTlsConfig, SERVICE_TLS_FLAGS, TLS_RELOAD_MS_DEFAULT } from "./tls-config.js";

describe("parseTlsConfig", () => {
  const parse = (raw: Record<string, string>, requireIdentity = true) =>
    parseTlsConfig(raw, SERVICE_TLS_FLAGS, { requireIdentity });
  it("nothing set is plaintext; all three is TLS; a client may go without a certificate", () => {
    expect(parse({})).toBeUndefined();
    expect(parse({ cert: "c", key: "k", ca: "a" })).toEqual({
      certFile: "c",
      keyFile: "k",
      caFile: "a",
      reloadMs: TLS_RELOAD_MS_DEFAULT,
    });
    expect(parse({ ca: "a" }, false)).toEqual({
      certFile: undefined,
      keyFile: undefined,
      caFile: "a",
      reloadMs: TLS_RELOAD_MS_DEFAULT,
    });
  });
  it("half a configuration is an error naming the flags", () => {
    expect(() => parse({ cert: "c", key: "k" })).toThrow(/--tls-ca-file is required/);
    expect(() => parse({ cert: "c", ca: "a" })).toThrow(
      /--tls-cert-file and --tls-key-file go together/,
    );
    expect(() => parse({ ca: "a" })).toThrow(/a TLS listener needs its own certificate/);
    expect(() => parse({ cert: "c", key: "k", ca: "a", reloadMs: "5" })).toThrow(
      /--tls-reload-ms: 5 is outside/,
    );
  });
  it("loadServiceConfig: plaintext by default, ConfigError for a half TLS setup", () => {
    expect(loadServiceConfig("broker", ["--node-id", "0"], {}).tls).toBeUndefined();
    expect(() => loadServiceConfig("broker", ["--node-id", "0", "--tls-ca-file", "a"], {})).toThrow(
      /--tls-cert-file and --tls-key-file are required/,
    );
  });
});

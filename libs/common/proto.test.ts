import { existsSync } from "node:fs";
import { join } from "node:path";
import * as protoLoader from "@grpc/proto-loader";
import { describe, expect, it } from "vitest";
import { ERRORS } from "./errors.js";
import { loadTernProto, PROTO_LOADER_OPTIONS, protoRoot, serviceDefinition } from "./proto.js";

function errorCodeEnum(): Map<string, number> {
  const root = protoRoot();
  const pkg = protoLoader.loadSync("tern/v1/common.proto", {
    ...PROTO_LOADER_OPTIONS,
    includeDirs: [root],
  });
  const enumDef = pkg["tern.v1.ErrorCode"] as protoLoader.EnumTypeDefinition;
  const values = (enumDef.type as { value: Array<{ name: string; number: number }> }).value;
  return new Map(values.map((v) => [v.name, v.number]));
}

describe("proto loader", () => {
  it("finds the repository's proto directory from the module location", () => {
    expect(existsSync(join(protoRoot(), "tern", "v1", "common.proto"))).toBe(true);
  });

  it("every ErrorCode in common.proto has the number of the same name in the errors table", () => {
    const protoCodes = errorCodeEnum();
    expect(protoCodes.size).toBeGreaterThan(10);
    for (const [name, number] of protoCodes) {
      expect(ERRORS.get(name as never)?.code, name).toBe(number);
    }
  });

  it("every entry of the errors table is in common.proto with the same number", () => {
    const protoCodes = errorCodeEnum();
    for (const spec of ERRORS.values()) {
      expect(protoCodes.get(spec.name), spec.name).toBe(spec.code);
    }
  });

  it("loads every proto/tern/v1 file into one package with its services", () => {
    const proto = loadTernProto();
    expect(proto.files).toContain(join("tern", "v1", "common.proto"));
    expect(proto.grpc.tern.v1.TopicPartition).toBeDefined();
    for (const name of proto.serviceNames) {
      expect(name.startsWith("tern.v1."), name).toBe(true);
      const def = serviceDefinition(proto, name)!;
      expect(Object.keys(def).length).toBeGreaterThan(0);
      // By a name known at run time only: the typed package has no index signature.
      expect(
        (proto.grpc.tern.v1 as unknown as Record<string, { service?: unknown }>)[
          name.slice("tern.v1.".length)
        ]?.service,
      ).toBeDefined();
    }
    expect(serviceDefinition(proto, "tern.v1.TopicPartition")).toBeUndefined();
    expect(loadTernProto()).toBe(proto);
  });

  it("reads 64-bit integers as decimal strings and enums as names", () => {
    const pkg = protoLoader.loadSync("tern/v1/common.proto", {
      ...PROTO_LOADER_OPTIONS,
      includeDirs: [protoRoot()],
    });
    const Record = pkg["tern.v1.Record"] as protoLoader.MessageTypeDefinition<unknown, unknown>;
    const type = (Record.type as { field: Array<{ name: string; type: string }> }).field.find(
      (f) => f.name === "timestamp_ms" || f.name === "timestampMs",
    );
    expect(type?.type).toBe("TYPE_INT64");
    expect(PROTO_LOADER_OPTIONS.longs).toBe(String);
    expect(PROTO_LOADER_OPTIONS.enums).toBe(String);
  });
});

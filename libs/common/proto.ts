// Loads the public gRPC contract (every proto/tern/v1/*.proto present) once per process.
// The proto directory is found from this module's location, so it works both from source
// (libs/common/proto.ts under vitest) and from the build (dist/libs/common/proto.js).
import { existsSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import type { TernGrpcPackage } from "./proto-types/index.js";

/** proto-loader options every tern process and client uses: 64-bit ints as decimal strings. */
export const PROTO_LOADER_OPTIONS: protoLoader.Options = {
  keepCase: false,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

export interface TernProto {
  /** grpc.loadPackageDefinition(...) result: `proto.tern.v1.Broker` etc. */
  readonly grpc: TernGrpcPackage;
  /** The raw package definition (for server reflection). */
  readonly packageDefinition: protoLoader.PackageDefinition;
  /** The .proto files loaded, relative to the proto root, sorted. */
  readonly files: readonly string[];
  /** Fully qualified names of every service loaded, e.g. "tern.v1.Broker". */
  readonly serviceNames: readonly string[];
}

const PROTO_PACKAGE_DIR = join("tern", "v1");
const SEARCH_LEVELS_MAX = 6;

/** The repository's proto/ directory, searched upwards from this module (TERN_PROTO_DIR overrides). */
export function protoRoot(): string {
  const override = process.env.TERN_PROTO_DIR;
  if (override) {
    if (!existsSync(join(override, PROTO_PACKAGE_DIR, "common.proto")))
      throw new Error(`TERN_PROTO_DIR=${override} has no tern/v1/common.proto`);
    return override;
  }
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let level = 0; level < SEARCH_LEVELS_MAX; level++) {
    const candidate = join(dir, "proto");
    if (existsSync(join(candidate, PROTO_PACKAGE_DIR, "common.proto"))) return candidate;
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  throw new Error(`proto/tern/v1/common.proto not found above ${fileURLToPath(import.meta.url)}`);
}

let cached: TernProto | undefined;

/** Loads (once) every proto/tern/v1/*.proto with the shared options. */
export function loadTernProto(): TernProto {
  if (cached) return cached;
  const root = protoRoot();
  const files = readdirSync(join(root, PROTO_PACKAGE_DIR))
    .filter((f) => f.endsWith(".proto"))
    .sort()
    .map((f) => join(PROTO_PACKAGE_DIR, f));
  const packageDefinition = protoLoader.loadSync(files, {
    ...PROTO_LOADER_OPTIONS,
    includeDirs: [root],
  });
  const serviceNames = Object.entries(packageDefinition)
    .filter(([, def]) => isServiceDefinition(def))
    .map(([name]) => name)
    .sort();
  // The generated TernGrpcPackage describes exactly what loadPackageDefinition builds from these files.
  cached = {
    grpc: grpc.loadPackageDefinition(packageDefinition) as unknown as TernGrpcPackage,
    packageDefinition,
    files,
    serviceNames,
  };
  return cached;
}

/** A service's definition by fully qualified name, e.g. "tern.v1.Broker"; undefined when its .proto is absent. */
export function serviceDefinition(
  proto: TernProto,
  fullName: string,
): grpc.ServiceDefinition | undefined {
  const def = proto.packageDefinition[fullName];
  return def && isServiceDefinition(def) ? (def as unknown as grpc.ServiceDefinition) : undefined;
}

function isServiceDefinition(def: unknown): boolean {
  // Message/enum definitions carry `format`; a service definition is a map of method definitions.
  if (typeof def !== "object" || def === null || "format" in def) return false;
  const methods = Object.values(def as Record<string, unknown>);
  return (
    methods.length > 0 && methods.every((m) => typeof m === "object" && m !== null && "path" in m)
  );
}

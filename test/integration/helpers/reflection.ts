// Lists the services a server exposes through grpc.reflection.v1 (bounded by a deadline).
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { channelCredentials } from "../../../libs/server/tls/credentials.js";

const require = createRequire(import.meta.url);

/** The part of grpc.reflection.v1 used here (keepCase: the proto's snake_case field names). */
interface ReflectionResponse {
  list_services_response?: { service: Array<{ name: string }> };
}
interface ReflectionClient extends grpc.Client {
  ServerReflectionInfo(
    options: grpc.CallOptions,
  ): grpc.ClientDuplexStream<{ list_services: string }, ReflectionResponse>;
}
interface ReflectionPackage {
  grpc: {
    reflection: {
      v1: {
        ServerReflection: new (
          address: string,
          credentials: grpc.ChannelCredentials,
        ) => ReflectionClient;
      };
    };
  };
}

export async function listServicesByReflection(
  address: string,
  timeoutMs = 3_000,
): Promise<string[]> {
  const root = join(dirname(require.resolve("@grpc/reflection/package.json")), "build", "proto");
  const def = protoLoader.loadSync("grpc/reflection/v1/reflection.proto", {
    includeDirs: [root],
    keepCase: true,
    defaults: true,
    oneofs: true,
  });
  // @grpc/reflection's own proto: no generated types for it here.
  const pkg = grpc.loadPackageDefinition(def) as unknown as ReflectionPackage;
  const client = new pkg.grpc.reflection.v1.ServerReflection(address, channelCredentials());
  try {
    return await new Promise<string[]>((resolveList, rejectList) => {
      const call = client.ServerReflectionInfo({ deadline: Date.now() + timeoutMs });
      call.on("data", (response: ReflectionResponse) => {
        resolveList((response.list_services_response?.service ?? []).map((s) => s.name).sort());
        call.cancel();
      });
      call.on("error", (e: grpc.ServiceError) => {
        if (e.code !== grpc.status.CANCELLED) rejectList(e);
      });
      call.write({ list_services: "" });
    });
  } finally {
    client.close();
  }
}

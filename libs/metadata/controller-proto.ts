// Loads only controller.proto (and what it imports) with the shared proto-loader options, so
// the controller client works even while other .proto files of the tree are being edited.
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { PROTO_LOADER_OPTIONS, protoRoot } from "../common/proto.js";

export const CONTROLLER_SERVICE_NAME = "tern.v1.Controller";

let cached: { definition: grpc.ServiceDefinition; client: grpc.ServiceClientConstructor } | undefined;

export function controllerProto(): { definition: grpc.ServiceDefinition; client: grpc.ServiceClientConstructor } {
  if (cached) return cached;
  const root = protoRoot();
  const packageDefinition = protoLoader.loadSync(["tern/v1/controller.proto"], { ...PROTO_LOADER_OPTIONS, includeDirs: [root] });
  const loaded = grpc.loadPackageDefinition(packageDefinition) as any;
  const client = loaded.tern.v1.Controller as grpc.ServiceClientConstructor;
  cached = { definition: client.service, client };
  return cached;
}

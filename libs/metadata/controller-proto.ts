// Loads only controller.proto (and what it imports) with the shared proto-loader options, so
// the controller client works even while other .proto files of the tree are being edited.
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { PROTO_LOADER_OPTIONS, protoRoot } from "../common/proto.js";
import type { ProtoGrpcType as ControllerPackage } from "../common/proto-types/controller.js";

/** The generated Controller client's constructor (new Ctor(address, credentials, options)). */
export type ControllerClientConstructor = ControllerPackage["tern"]["v1"]["Controller"];

let cached: { definition: grpc.ServiceDefinition; client: ControllerClientConstructor } | undefined;

export function controllerProto(): {
  definition: grpc.ServiceDefinition;
  client: ControllerClientConstructor;
} {
  if (cached) return cached;
  const root = protoRoot();
  const packageDefinition = protoLoader.loadSync(["tern/v1/controller.proto"], {
    ...PROTO_LOADER_OPTIONS,
    includeDirs: [root],
  });
  // The generated ProtoGrpcType of controller.proto describes what loadPackageDefinition builds from it.
  const loaded = grpc.loadPackageDefinition(packageDefinition) as unknown as ControllerPackage;
  const client = loaded.tern.v1.Controller;
  cached = { definition: client.service, client };
  return cached;
}

// PLACEHOLDER (written by the runtime engineer): the broker owner replaces this file with the
// real composition. It exposes the role's gRPC contract, every RPC answering UNIMPLEMENTED,
// and reports ready as soon as the server is up.
import type * as grpc from "@grpc/grpc-js";
import { unimplementedService } from "../../libs/server/unimplemented.js";
import type { ServiceContext, ServiceParts } from "../../libs/server/service.js";

const SERVICE_NAMES = ["Broker", "GroupCoordinator"] as const;

export async function compose(ctx: ServiceContext): Promise<ServiceParts> {
  const services = SERVICE_NAMES.flatMap((name) => {
    const definition = ctx.proto.tern?.v1?.[name]?.service as grpc.ServiceDefinition | undefined;
    if (!definition) ctx.logger.warn({ service: name }, "service missing from the loaded proto");
    return definition ? [{ definition, implementation: unimplementedService(definition) }] : [];
  });
  ctx.setReady(true);
  return { services, drain: async () => {}, close: async () => {} };
}

// A service implementation that answers UNIMPLEMENTED for every method of a definition:
// lets a role expose its whole contract before the logic behind each RPC exists.
import * as grpc from "@grpc/grpc-js";

export function unimplementedService(
  definition: grpc.ServiceDefinition,
): grpc.UntypedServiceImplementation {
  const implementation: grpc.UntypedServiceImplementation = {};
  for (const [name, method] of Object.entries(definition)) {
    implementation[name] = unimplementedHandler(
      method.path,
      method.requestStream,
      method.responseStream,
    );
  }
  return implementation;
}

/** The handler of one method; shape depends on whether it streams. */
export function unimplementedHandler(
  path: string,
  requestStream: boolean,
  responseStream: boolean,
): grpc.UntypedHandleCall {
  const error = (): Partial<grpc.StatusObject> => ({
    code: grpc.status.UNIMPLEMENTED,
    details: `${path} is not implemented yet`,
  });
  if (!responseStream) {
    return (_call: unknown, callback: grpc.sendUnaryData<unknown>) => callback(error(), null);
  }
  if (!requestStream) {
    return (call: grpc.ServerWritableStream<unknown, unknown>) => call.emit("error", error());
  }
  return (call: grpc.ServerDuplexStream<unknown, unknown>) => call.emit("error", error());
}

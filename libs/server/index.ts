// The process runtime every tern service uses. See docs/operations.md.
export type { Compose, GrpcServiceBinding, ServiceContext, ServiceParts } from "./service.js";
export { runService, EXIT_CRASH, EXIT_OK, EXIT_STARTUP } from "./run-service.js";
export { startService, type RunningService, type StartServiceOptions } from "./start-service.js";
export { unimplementedService, unimplementedHandler } from "./unimplemented.js";
export {
  wrapUnary,
  wrapUnaryService,
  type AsyncHandlers,
  type AsyncUnaryHandler,
  type UnaryOptions,
} from "./unary-handler.js";
export {
  GRPC_CLIENT_OPTIONS,
  GRPC_SERVER_OPTIONS,
  GRPC_MESSAGE_BYTES_MAX,
  formatAddress,
} from "../grpc/grpc-options.js";
export { serviceNameOf } from "./health.js";
export { StartupError } from "./startup-error.js";
export { checkHealth, waitForHealthStatus, type HealthAnswer } from "./health-client.js";

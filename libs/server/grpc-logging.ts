// grpc-js writes its own diagnostics to stderr ("E No address added ..."); a service keeps
// stderr for its one-line startup reason, so those go to the process's JSON log instead.
import { format } from "node:util";
import * as grpc from "@grpc/grpc-js";
import type { Logger } from "../common/logger.js";

export function routeGrpcLogs(logger: Logger): void {
  const child = logger.child({ source: "grpc-js" });
  grpc.setLogger({
    error: (message?: unknown, ...rest: unknown[]) => child.warn(format(message, ...rest)),
    info: (message?: unknown, ...rest: unknown[]) => child.info(format(message, ...rest)),
    debug: (message?: unknown, ...rest: unknown[]) => child.debug(format(message, ...rest)),
  });
}

// Graceful stop within one budget (shutdownTimeoutMs): health goes NOT_SERVING at once so
// clients move away, the role drains (leadership transfer, in-flight work), the gRPC server
// finishes open calls (tryShutdown) and is forced down when the budget is spent, then the
// role closes its resources. Every step is bounded; a step that fails is logged, not fatal.
import type * as grpc from "@grpc/grpc-js";
import type { Logger } from "../common/logger.js";
import type { ProcessHealth } from "./health.js";
import type { MetricsServer } from "./metrics-server.js";
import type { ServiceParts } from "./service.js";

export interface ShutdownResult {
  /** False when some step timed out or failed (the process still stops). */
  readonly clean: boolean;
  readonly elapsedMs: number;
}

/** Share of the budget the role's drain may use; the rest is for in-flight calls and close. */
const DRAIN_BUDGET_FRACTION = 0.6;
const CLOSE_TIMEOUT_MS_MIN = 1_000;
/**
 * How long open calls get to finish after the drain. Unary calls finish well within it; the
 * long-lived ones (peers' Raft streams, metadata watches, fetch long-polls) never end by
 * themselves, so the server cancels them once this grace is over: that is the normal path.
 */
const IN_FLIGHT_GRACE_MS = 2_000;

export async function shutdownService(options: {
  reason: string;
  server: grpc.Server;
  health: ProcessHealth;
  parts: ServiceParts;
  metricsServer: MetricsServer;
  logger: Logger;
  timeoutMs: number;
}): Promise<ShutdownResult> {
  const { logger, server, parts } = options;
  const startMs = Date.now();
  const deadlineMs = startMs + options.timeoutMs;
  logger.info({ reason: options.reason, timeoutMs: options.timeoutMs }, "shutting down");
  options.health.beginShutdown();
  let clean = await bounded(
    "drain",
    () => parts.drain(),
    Math.floor(options.timeoutMs * DRAIN_BUDGET_FRACTION),
    logger,
  );
  const graceMs = Math.min(IN_FLIGHT_GRACE_MS, Math.max(0, deadlineMs - Date.now()));
  const serverStopped = await bounded(
    "grpc tryShutdown",
    () => new Promise<void>((resolveStop) => server.tryShutdown(() => resolveStop())),
    graceMs,
    logger,
    "info",
  );
  if (!serverStopped) server.forceShutdown();
  clean =
    (await bounded(
      "close",
      () => parts.close(),
      Math.max(CLOSE_TIMEOUT_MS_MIN, deadlineMs - Date.now()),
      logger,
    )) && clean;
  await options.metricsServer.close();
  const elapsedMs = Date.now() - startMs;
  logger.info({ clean, elapsedMs }, "stopped");
  return { clean, elapsedMs };
}

/** Runs step() for at most timeoutMs; true when it finished without error in time. */
async function bounded(
  step: string,
  run: () => Promise<void>,
  timeoutMs: number,
  logger: Logger,
  timeoutLevel: "info" | "warn" = "warn",
): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<"timeout">((resolveTimeout) => {
    timer = setTimeout(() => resolveTimeout("timeout"), timeoutMs);
  });
  try {
    const outcome = await Promise.race([run().then(() => "done" as const), timeout]);
    if (outcome === "timeout") logger[timeoutLevel]({ step, timeoutMs }, "shutdown step timed out");
    return outcome === "done";
  } catch (e) {
    logger.error({ step, err: e }, "shutdown step failed");
    return false;
  } finally {
    clearTimeout(timer);
  }
}

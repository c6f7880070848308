// The whole life of a service process. Startup failures are one line `tern-<role>: <reason>`
// on stderr with exit 2 (bad config, data dir, port in use) or 1 (compose failed);
// SIGTERM/SIGINT shut down gracefully and exit 0; an uncaught exception is logged fatal and
// exits 1.
import type { Role } from "../common/config.js";
import type { Logger } from "../common/logger.js";
import type { Compose } from "./service.js";
import { startService, type RunningService } from "./start-service.js";
import { StartupError } from "./startup-error.js";

export const EXIT_OK = 0;
export const EXIT_CRASH = 1;
export const EXIT_STARTUP = 2;
/** Beyond the graceful budget, the process exits no matter what is still pending. */
const HARD_EXIT_GRACE_MS = 5_000;

export async function runService(options: {
  role: Role;
  argv: readonly string[];
  compose: Compose;
  env?: NodeJS.ProcessEnv;
}): Promise<void> {
  const { role } = options;
  let logger: Logger | undefined;
  installCrashHandlers(role, () => logger);
  let running: RunningService;
  try {
    running = await startService(options);
  } catch (e) {
    const reason = e instanceof Error ? e.message.split("\n")[0] : String(e);
    if (e instanceof StartupError) {
      process.stderr.write(`tern-${role}: ${reason}\n`);
      process.exit(EXIT_STARTUP);
    }
    process.stderr.write(`tern-${role}: startup failed: ${reason}\n`);
    process.exit(EXIT_CRASH);
  }
  logger = running.logger;
  const onSignal = (signal: NodeJS.Signals): void => {
    running.logger.info({ signal }, "signal received");
    setTimeout(() => {
      running.logger.error({ signal }, "graceful shutdown exceeded its hard bound; exiting");
      process.exit(EXIT_CRASH);
    }, running.config.shutdownTimeoutMs + HARD_EXIT_GRACE_MS).unref();
    void running.shutdown(signal).then(() => process.exit(EXIT_OK));
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
}

function installCrashHandlers(role: Role, logger: () => Logger | undefined): void {
  const crash = (kind: string) => (e: unknown) => {
    const log = logger();
    if (log) log.fatal({ err: e, kind }, "crash");
    process.stderr.write(
      `tern-${role}: ${kind}: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}\n`,
    );
    process.exit(EXIT_CRASH);
  };
  process.on("uncaughtException", crash("uncaught exception"));
  process.on("unhandledRejection", crash("unhandled rejection"));
}

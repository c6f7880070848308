// Structured JSON logs (pino). Every service logs through a child with {component, nodeId}.
import { pino, type Logger } from "pino";

export type { Logger };

export function createLogger(options: {
  level?: string;
  component: string;
  nodeId?: number | string;
  /** Log to stderr: for a process whose stdout is a protocol (test helpers' ready line). */
  stderr?: boolean;
}): Logger {
  const settings = {
    level: options.level ?? process.env.TERN_LOG_LEVEL ?? "info",
    base: { pid: process.pid },
  };
  const root = options.stderr === true ? pino(settings, pino.destination(2)) : pino(settings);
  return root.child({ component: options.component, nodeId: options.nodeId });
}

/** A logger that drops everything: for unit tests and the simulator. */
export function silentLogger(): Logger {
  return pino({ level: "silent" });
}

// The logger an SDK client writes to: the part of pino's Logger the clients use, so a caller
// can pass a pino logger (or any object with these methods) and the SDK does not ship pino.
export interface ClientLogger {
  debug(fields: object, message?: string): void;
  debug(message: string): void;
  info(fields: object, message?: string): void;
  info(message: string): void;
  warn(fields: object, message?: string): void;
  warn(message: string): void;
  error(fields: object, message?: string): void;
  error(message: string): void;
  isLevelEnabled(level: string): boolean;
}

const SILENT: ClientLogger = {
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  isLevelEnabled: () => false,
};

/** A logger that drops everything: a client's default. */
export function silentClientLogger(): ClientLogger {
  return SILENT;
}

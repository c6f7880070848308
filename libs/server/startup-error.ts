// A reason the process cannot start (bad config, data dir, port in use): reported as ONE line
// `tern-<role>: <reason>` on stderr and exit code 2, before anything is served.
export class StartupError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message.split("\n")[0]!, options);
    this.name = "StartupError";
  }
}

/** The single-line form of an OS error: "EADDRINUSE" → "address already in use". */
export function describeOsError(e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  const byCode: Record<string, string> = {
    EADDRINUSE: "address already in use",
    EADDRNOTAVAIL: "address not available on this host",
    EACCES: "permission denied",
    EPERM: "operation not permitted",
    EROFS: "read-only file system",
    ENOTDIR: "a parent path is not a directory",
    ENOSPC: "no space left on device",
    EEXIST: "a file is in the way",
  };
  if (err && typeof err.code === "string" && byCode[err.code])
    return `${byCode[err.code]} (${err.code})`;
  const message = err instanceof Error ? err.message : String(e);
  const known = Object.keys(byCode).find((code) => message.includes(code));
  if (known) return `${byCode[known]} (${known})`;
  return message.split("\n")[0]!;
}

// Output for people (aligned tables) and for scripts (--json: one JSON document on stdout).
// bigint values print as decimal strings in JSON.

export const EXIT_OK = 0;
/** The cluster answered with an error, or could not be reached. */
export const EXIT_CLUSTER_ERROR = 1;
/** Bad command line (unknown command or option, missing or malformed argument). */
export const EXIT_USAGE = 2;

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

export function toJson(value: unknown): string {
  return JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? v.toString() : v), 2);
}

export function printJson(value: unknown): void {
  process.stdout.write(`${toJson(value)}\n`);
}

/** An aligned table; cells are stringified, columns padded to their widest cell. */
export function formatTable(
  headers: readonly string[],
  rows: ReadonlyArray<ReadonlyArray<unknown>>,
): string {
  const cells = [
    headers.map(String),
    ...rows.map((r) => r.map((c) => (c === undefined || c === null ? "" : String(c)))),
  ];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  return cells
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!)))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

export function printTable(
  headers: readonly string[],
  rows: ReadonlyArray<ReadonlyArray<unknown>>,
): void {
  process.stdout.write(`${formatTable(headers, rows)}\n`);
}

export function parseIntArg(value: string, what: string, min = 0): number {
  if (!/^-?\d+$/.test(value.trim()))
    throw new UsageError(`${what} must be an integer, got "${value}"`);
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < min)
    throw new UsageError(`${what} must be an integer >= ${min}, got "${value}"`);
  return n;
}

export function parseBigIntArg(value: string, what: string): bigint {
  if (!/^-?\d+$/.test(value.trim()))
    throw new UsageError(`${what} must be an integer, got "${value}"`);
  return BigInt(value);
}

/** A progress bar on stderr (only when stderr is a terminal; otherwise a line every `every`). */
export function progress(done: number, total: number | undefined, label: string): void {
  if (process.stderr.isTTY) {
    const width = 30;
    const bar = total ? "#".repeat(Math.round((done / total) * width)).padEnd(width, ".") : "";
    process.stderr.write(`\r${label} ${total ? `[${bar}] ${done}/${total}` : done}`);
  } else {
    process.stderr.write(`${label} ${done}${total ? `/${total}` : ""}\n`);
  }
}

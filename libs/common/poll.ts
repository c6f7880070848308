// Bounded polling for tests, benchmarks and tools: every wait is a condition with a deadline,
// never a fixed sleep. The last error a probe threw goes into the timeout message.

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export interface UntilOptions {
  /** Pause between probes (default 200 ms). */
  readonly intervalMs?: number;
  /** An error for which this returns true is thrown at once instead of retried. */
  readonly fatal?: (err: unknown) => boolean;
}

/** Calls probe until it returns something other than undefined; throws after timeoutMs. */
export async function until<T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined> | T | undefined,
  options: UntilOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (e) {
      if (options.fatal?.(e)) throw e;
      last = e;
    }
    await sleep(options.intervalMs ?? 200);
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ""}`);
}

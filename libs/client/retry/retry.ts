// Retries an async operation only while its error is retriable (the error table in
// libs/common/errors.ts decides), with capped exponential backoff plus "equal jitter", a
// bounded number of attempts and an overall deadline.
import { isTernError } from "../../common/errors.js";
import { ClientError } from "../errors.js";

export interface RetryOptions {
  /** Attempts in total, including the first (default 10). */
  readonly attemptsMax?: number;
  /** Give up once this much time has passed since the first attempt (default 30000). */
  readonly timeoutMs?: number;
  readonly backoffMsMin?: number;
  readonly backoffMsMax?: number;
  /** Called before each backoff, e.g. to refresh metadata. */
  readonly onRetry?: (error: unknown, attempt: number) => void | Promise<void>;
  /** Overrides the retriable test (default: TernError.retriable or ClientError.retriable). */
  readonly isRetriable?: (error: unknown) => boolean;
}

export const RETRY_ATTEMPTS_MAX_DEFAULT = 10;
export const RETRY_TIMEOUT_MS_DEFAULT = 30_000;
export const BACKOFF_MS_MIN_DEFAULT = 50;
export const BACKOFF_MS_MAX_DEFAULT = 1_000;
const BACKOFF_EXPONENT_MAX = 16;

export function isRetriable(error: unknown): boolean {
  if (error instanceof ClientError) return error.retriable;
  return isTernError(error) && error.retriable;
}

/** Exponential backoff capped at backoffMsMax, half fixed and half random. */
export function backoffMs(
  attempt: number,
  backoffMsMin = BACKOFF_MS_MIN_DEFAULT,
  backoffMsMax = BACKOFF_MS_MAX_DEFAULT,
  random: () => number = Math.random,
): number {
  const cap = Math.min(backoffMsMax, backoffMsMin * 2 ** Math.min(attempt, BACKOFF_EXPONENT_MAX));
  return cap / 2 + random() * (cap / 2);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export async function retry<T>(
  operation: (attempt: number) => Promise<T>,
  options: RetryOptions = {},
): Promise<T> {
  const attemptsMax = options.attemptsMax ?? RETRY_ATTEMPTS_MAX_DEFAULT;
  const deadline = Date.now() + (options.timeoutMs ?? RETRY_TIMEOUT_MS_DEFAULT);
  const retriable = options.isRetriable ?? isRetriable;
  for (let attempt = 0; ; attempt++) {
    try {
      return await operation(attempt);
    } catch (e) {
      if (!retriable(e) || attempt + 1 >= attemptsMax) throw e;
      const wait = backoffMs(attempt, options.backoffMsMin, options.backoffMsMax);
      if (Date.now() + wait >= deadline) throw e;
      await options.onRetry?.(e, attempt);
      await sleep(wait);
    }
  }
}

// Assertions catch programmer errors and crash; operating errors use TernError instead.
export class AssertionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AssertionError";
  }
}

export function assert(condition: unknown, message: string | (() => string)): asserts condition {
  if (!condition) throw new AssertionError(typeof message === "function" ? message() : message);
}

/**
 * For the catch-all of a request path (a gRPC handler's, a Kafka connection's): a broken
 * invariant is not a failed request. The process must stop rather than answer from state it
 * can no longer trust, so an AssertionError is rethrown outside any promise chain (the
 * service's crash handler logs it fatal and exits non-zero) and the caller answers nothing.
 * True when `e` is one (the caller then returns at once).
 */
export function haltOnAssertion(e: unknown): boolean {
  if (!(e instanceof AssertionError)) return false;
  process.nextTick(() => {
    throw e;
  });
  return true;
}

export function unreachable(value: never, what = "value"): never {
  throw new AssertionError(`unreachable: unexpected ${what} ${JSON.stringify(value)}`);
}

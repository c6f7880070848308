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

export function unreachable(value: never, what = "value"): never {
  throw new AssertionError(`unreachable: unexpected ${what} ${JSON.stringify(value)}`);
}

// The demo's transformation: uppercase plus a suffix. Pure, shared by the copier and the checks.
export const SUFFIX = " [copied]";

export function transform(value: string): string {
  return `${value.toUpperCase()}${SUFFIX}`;
}

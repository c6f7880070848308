// When a consumer group has settled, as its members report it (the "owned" lines of
// test/integration/helpers/group-consumer-process.ts): every member owns something, no
// partition twice, every partition once, and the sizes differ by at most one (the uniform
// assignor's target). Balance matters: mid-rebalance the owned sets can already be a disjoint
// cover while a member still holds more than its share, waiting to revoke (e.g. [2, 3, 1] of
// 6). Used by `npm run bench -- groups` and the group tests; kept out of test/, which the
// image build does not have.
export function isBalancedSplit(
  owned: readonly (readonly string[])[],
  all: readonly string[],
): boolean {
  const sizes = owned.map((o) => o.length);
  const flat = owned.flat();
  const distinct = new Set(flat);
  return (
    Math.min(...sizes) > 0 &&
    Math.max(...sizes) - Math.min(...sizes) <= 1 &&
    flat.length === all.length &&
    distinct.size === all.length &&
    all.every((p) => distinct.has(p))
  );
}

// The server-side assignors: balance, stickiness, heterogeneous subscriptions, determinism.
import { describe, expect, it } from "vitest";
import { SeededRandom } from "../../libs/common/prng.js";
import { rangeAssign, uniformAssign, type Assignment, type AssignorMember } from "./assignors.js";

const members = (ids: string[], topics: string[] = ["t"]): AssignorMember[] =>
  ids.map((memberId) => ({ memberId, topics: new Set(topics) }));
const counts = (a: Map<string, Assignment>): number[] =>
  [...a.values()].map((x) => [...x.values()].reduce((n, ps) => n + ps.length, 0));
const flat = (a: Map<string, Assignment>): string[] =>
  [...a.values()].flatMap((x) => [...x].flatMap(([t, ps]) => ps.map((p) => `${t}-${p}`))).sort();
const owners = (a: Map<string, Assignment>): Map<string, string> => {
  const out = new Map<string, string>();
  for (const [id, x] of a) for (const [t, ps] of x) for (const p of ps) out.set(`${t}-${p}`, id);
  return out;
};

describe("uniform assignor", () => {
  it("covers every partition once and balances within one", () => {
    const a = uniformAssign({
      members: members(["a", "b", "c"]),
      topics: new Map([["t", 7]]),
      previous: new Map(),
    });
    expect(flat(a)).toEqual(["t-0", "t-1", "t-2", "t-3", "t-4", "t-5", "t-6"]);
    expect(Math.max(...counts(a)) - Math.min(...counts(a))).toBeLessThanOrEqual(1);
  });

  it("moves only what a joining member takes, and a leaving member's partitions only", () => {
    const topics = new Map([["t", 6]]);
    const three = uniformAssign({ members: members(["a", "b", "c"]), topics, previous: new Map() });
    const four = uniformAssign({ members: members(["a", "b", "c", "d"]), topics, previous: three });
    const before = owners(three);
    const after = owners(four);
    const moved = [...after].filter(([tp, id]) => before.get(tp) !== id);
    expect(moved.every(([, id]) => id === "d")).toBe(true);
    expect(moved.length).toBe(1);
    const two = uniformAssign({ members: members(["a", "c", "d"]), topics, previous: four });
    const movedOut = [...owners(two)].filter(([tp, id]) => after.get(tp) !== id);
    expect(movedOut.every(([tp]) => after.get(tp) === "b")).toBe(true);
    expect(counts(two)).toEqual([2, 2, 2]);
  });

  it("gives partitions only to subscribed members", () => {
    const ms: AssignorMember[] = [
      { memberId: "a", topics: new Set(["x"]) },
      { memberId: "b", topics: new Set(["x", "y"]) },
      { memberId: "c", topics: new Set(["y"]) },
    ];
    const a = uniformAssign({
      members: ms,
      topics: new Map([
        ["x", 4],
        ["y", 2],
      ]),
      previous: new Map(),
    });
    expect(flat(a).length).toBe(6);
    for (const [id, x] of a)
      for (const t of x.keys()) expect(ms.find((m) => m.memberId === id)!.topics.has(t)).toBe(true);
    expect(counts(a)).toEqual([2, 2, 2]);
  });

  it("is deterministic and balanced over random memberships (seeded)", () => {
    const rnd = new SeededRandom(16);
    let previous = new Map<string, Assignment>();
    for (let round = 0; round < 200; round++) {
      const n = 1 + Math.floor(rnd.next() * 10);
      const ids = Array.from({ length: n }, (_, i) => `m${Math.floor(rnd.next() * 15)}-${i % 3}`);
      const unique = [...new Set(ids)];
      const topics = new Map([
        ["t", 1 + Math.floor(rnd.next() * 60)],
        ["u", Math.floor(rnd.next() * 5) + 1],
      ]);
      const input = { members: members(unique, ["t", "u"]), topics, previous };
      const a = uniformAssign(input);
      expect(JSON.stringify([...uniformAssign(input)].map(([k, v]) => [k, [...v]]))).toBe(
        JSON.stringify([...a].map(([k, v]) => [k, [...v]])),
      );
      const total = [...topics.values()].reduce((x, y) => x + y, 0);
      expect(flat(a).length).toBe(total);
      expect(new Set(flat(a)).size).toBe(total);
      expect(Math.max(...counts(a)) - Math.min(...counts(a))).toBeLessThanOrEqual(1);
      previous = a;
    }
  });
});

describe("range assignor", () => {
  it("splits each topic in contiguous ranges in member-id order", () => {
    const a = rangeAssign({
      members: members(["b", "a"], ["x", "y"]),
      topics: new Map([
        ["x", 3],
        ["y", 3],
      ]),
      previous: new Map(),
    });
    expect([...a.get("a")!]).toEqual([
      ["x", [0, 1]],
      ["y", [0, 1]],
    ]);
    expect([...a.get("b")!]).toEqual([
      ["x", [2]],
      ["y", [2]],
    ]);
  });
});

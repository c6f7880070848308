// The partition shapes as iptables rules: for each shape, which node's packets to which
// listener (and to which open connection) are dropped, and that nothing else is.
import { describe, expect, it } from "vitest";
import type { NodeRef } from "../cluster/chaos-cluster.js";
import { cutRules, type Connection, type Endpoint } from "./network-partition.js";
import { shapeCut, type DirectedPair } from "./partition-shapes.js";

const roles = ["controller", "broker", "coordinator"] as const;
/** 3 nodes of each role: controller-0 listens on 127.0.0.10:100, broker-1 on 127.0.0.14:111... */
const ALL: NodeRef[] = roles.flatMap((role) => [0, 1, 2].map((id) => ({ role, id })));
const name = (n: NodeRef): string => `${n.role}-${n.id}`;
const endpoint = (n: NodeRef): Endpoint => {
  const r = roles.indexOf(n.role);
  return { name: name(n), address: `127.0.0.${10 + r * 3 + n.id}:${100 + r * 10 + n.id}` };
};
const lookup = {
  cgroupPath: (n: string) => `/tern/${n}`,
  pids: (n: string) => (n === "broker-0" ? [40] : n === "coordinator-1" ? [71] : []),
};
/** broker-0 (pid 40) has a connection open to controller-0's listener; coordinator-1 (pid 71) to broker-2's. */
const CONNECTIONS: Connection[] = [
  { local: "127.0.0.1:5000", peer: endpoint({ role: "controller", id: 0 }).address, pids: [40] },
  { local: "127.0.0.1:5001", peer: endpoint({ role: "broker", id: 2 }).address, pids: [71] },
];

const rulesOf = (pairs: readonly DirectedPair[]): string[] =>
  cutRules(
    "C",
    pairs.map(([a, b]) => [endpoint(a), endpoint(b)] as const),
    CONNECTIONS,
    lookup,
  );
const drop = (from: string, to: string): string =>
  `-A C -m cgroup --path /tern/${from} -p tcp -d ${to.split(":")[0]} --dport ${to.split(":")[1]} -j DROP`;
const listener = (n: string): string => {
  const [role, id] = [n.slice(0, n.lastIndexOf("-")), Number(n.slice(n.lastIndexOf("-") + 1))];
  return endpoint({ role: role as NodeRef["role"], id }).address;
};
/** The listener rules of pairs given as "from>to" names. */
const listenerRules = (pairs: string[]): string[] =>
  pairs.map((p) => {
    const [from, to] = p.split(">") as [string, string];
    return drop(from, listener(to));
  });
/** Directed name pairs of every a x b, both orders. */
const bothWays = (a: string[], b: string[]): string[] =>
  a.flatMap((x) => b.flatMap((y) => [`${x}>${y}`, `${y}>${x}`]));
const ids = (role: string, list = [0, 1, 2]): string[] => list.map((i) => `${role}-${i}`);

describe("partition shapes", () => {
  it("coordinators-from-brokers: every coordinator <-> every broker, controllers untouched", () => {
    const rules = rulesOf(shapeCut({ split: "coordinators-from-brokers", all: ALL }).pairs);
    expect(rules.sort()).toEqual(
      [
        ...listenerRules(bothWays(ids("coordinator"), ids("broker"))),
        // broker-2 answering coordinator-1's open connection
        drop("broker-2", "127.0.0.1:5001"),
      ].sort(),
    );
    expect(rules.some((r) => r.includes("controller"))).toBe(false);
    expect(rules.some((r) => r.includes(listener("controller-0")))).toBe(false);
  });

  it("brokers-from-controllers: every broker <-> every controller, coordinators untouched", () => {
    const rules = rulesOf(shapeCut({ split: "brokers-from-controllers", all: ALL }).pairs);
    expect(rules.sort()).toEqual(
      [
        ...listenerRules(bothWays(ids("broker"), ids("controller"))),
        // controller-0 answering broker-0's open connection (its metadata watch)
        drop("controller-0", "127.0.0.1:5000"),
      ].sort(),
    );
    expect(rules.some((r) => r.includes("coordinator"))).toBe(false);
  });

  it("bridge: the two halves are cut from each other, the middle nodes from nobody", () => {
    const shape = shapeCut({ split: "bridge", all: ALL, index: 1 });
    // middle id 1; halves: id 0 and id 2 of every role
    const half1 = roles.map((r) => `${r}-0`);
    const half2 = roles.map((r) => `${r}-2`);
    const rules = rulesOf(shape.pairs);
    // coordinator-1 is a middle node: its connection to broker-2 stays open
    expect(rules.sort()).toEqual(listenerRules(bothWays(half1, half2)).sort());
    for (const r of roles) expect(rules.some((x) => x.includes(`/tern/${r}-1 `))).toBe(false);
    for (const r of roles) expect(rules.some((x) => x.includes(listener(`${r}-1`)))).toBe(false);
    expect(shape.description).toContain("bridged by controller-1,broker-1,coordinator-1");
  });

  it("asymmetric outbound: only the leader's packets are dropped, its listener stays reachable", () => {
    const leader: NodeRef = { role: "coordinator", id: 1 };
    const rules = rulesOf(shapeCut({ split: "asymmetric", all: ALL, leader }).pairs);
    const others = ALL.filter((n) => name(n) !== "coordinator-1").map(name);
    expect(rules.sort()).toEqual(listenerRules(others.map((o) => `coordinator-1>${o}`)).sort());
    expect(rules.every((r) => r.includes("/tern/coordinator-1 "))).toBe(true);
    expect(rules.some((r) => r.includes(listener("coordinator-1")))).toBe(false);
  });

  it("asymmetric inbound: every packet to the leader is dropped, including answers on its own connections", () => {
    const leader: NodeRef = { role: "coordinator", id: 1 };
    const rules = rulesOf(
      shapeCut({ split: "asymmetric", all: ALL, leader, direction: "inbound" }).pairs,
    );
    const others = ALL.filter((n) => name(n) !== "coordinator-1").map(name);
    expect(rules.sort()).toEqual(
      [
        ...listenerRules(others.map((o) => `${o}>coordinator-1`)),
        // broker-2's answers on the connection coordinator-1 opened to it
        drop("broker-2", "127.0.0.1:5001"),
      ].sort(),
    );
    expect(rules.some((r) => r.includes("/tern/coordinator-1 "))).toBe(false);
  });

  it("keeps the existing shapes: one leader from the brokers or its peers, one id from the rest", () => {
    const leader: NodeRef = { role: "coordinator", id: 0 };
    expect(
      rulesOf(shapeCut({ split: "coordinator-from-brokers", all: ALL, leader }).pairs).sort(),
    ).toEqual(listenerRules(bothWays(["coordinator-0"], ids("broker"))).sort());
    expect(
      rulesOf(shapeCut({ split: "coordinator-from-peers", all: ALL, leader }).pairs).sort(),
    ).toEqual(listenerRules(bothWays(["coordinator-0"], ids("coordinator", [1, 2]))).sort());
    const split = shapeCut({ split: "majority-minority", all: ALL, index: 2 });
    expect(split.pairs).toHaveLength(3 * 6 * 2);
    expect(split.description).toBe(
      "controller-2,broker-2,coordinator-2 | controller-0,controller-1,broker-0,broker-1,coordinator-0,coordinator-1",
    );
  });

  it("refuses a shape that needs a leader without one", () => {
    expect(() => shapeCut({ split: "asymmetric", all: ALL })).toThrow(/needs a live leader/);
  });
});

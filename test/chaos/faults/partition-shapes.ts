// The shapes of a network partition as directed pairs of nodes: [from, to] means every packet
// from sends to to is dropped (network-partition.ts turns pairs into iptables rules). A
// symmetric cut lists both orders. Pure: the executor resolves the leader first, the unit test
// checks each shape's pairs.
import type { NodeRef } from "../cluster/chaos-cluster.js";
import type { SplitKind } from "./fault-types.js";

export type DirectedPair = readonly [NodeRef, NodeRef];

export interface ShapeInput {
  readonly split: SplitKind;
  /** Every node of the cluster. */
  readonly all: readonly NodeRef[];
  /** The node the cut is about (a coordinator leader), for the shapes that name one. */
  readonly leader?: NodeRef;
  /** majority-minority: the id cut off; bridge: the id of the middle nodes. */
  readonly index?: number;
  /** asymmetric: the leader's packets are dropped (outbound) or the packets to it (inbound). */
  readonly direction?: "outbound" | "inbound";
}

export interface CutShape {
  readonly pairs: DirectedPair[];
  /** Who cannot reach whom, for the report ("a,b | c,d" or "a -> b,c" for one direction). */
  readonly description: string;
}

const same = (a: NodeRef, b: NodeRef): boolean => a.role === b.role && a.id === b.id;
const name = (n: NodeRef): string => `${n.role}-${n.id}`;
const names = (ns: readonly NodeRef[]): string => ns.map(name).join(",");

function both(a: readonly NodeRef[], b: readonly NodeRef[]): CutShape {
  const pairs: DirectedPair[] = [];
  for (const x of a) for (const y of b) if (!same(x, y)) pairs.push([x, y], [y, x]);
  return { pairs, description: `${names(a)} | ${names(b)}` };
}

function needLeader(input: ShapeInput): NodeRef {
  if (!input.leader) throw new Error(`a ${input.split} partition needs a live leader to cut`);
  return input.leader;
}

export function shapeCut(input: ShapeInput): CutShape {
  const { all } = input;
  const ofRole = (role: NodeRef["role"]): NodeRef[] => all.filter((n) => n.role === role);
  switch (input.split) {
    case "coordinator-from-brokers":
      return both([needLeader(input)], ofRole("broker"));
    case "coordinator-from-peers": {
      const leader = needLeader(input);
      return both(
        [leader],
        ofRole("coordinator").filter((n) => !same(n, leader)),
      );
    }
    case "majority-minority": {
      // One node of each role: a minority of every quorum.
      const i = input.index ?? 0;
      return both(
        all.filter((n) => n.id === i),
        all.filter((n) => n.id !== i),
      );
    }
    case "coordinators-from-brokers":
      // Every coordinator and every broker still reach the controllers.
      return both(ofRole("coordinator"), ofRole("broker"));
    case "brokers-from-controllers":
      // Brokers still reach coordinators and each other; their heartbeats and reports stop.
      return both(ofRole("broker"), ofRole("controller"));
    case "bridge": {
      // Per role, id `middle` sees everyone; the two other ids (and the spare, on the first
      // half) are two halves that cannot see each other: each sees one middle node of a group.
      const middle = input.index ?? 0;
      const second = (middle + 2) % 3;
      const half1 = all.filter((n) => n.id !== middle && n.id !== second);
      const half2 = all.filter((n) => n.id === second);
      const cut = both(half1, half2);
      return {
        pairs: cut.pairs,
        description: `${cut.description} (bridged by ${names(all.filter((n) => n.id === middle))})`,
      };
    }
    case "asymmetric": {
      const leader = needLeader(input);
      const others = all.filter((n) => !same(n, leader));
      if (input.direction === "inbound")
        return {
          pairs: others.map((n): DirectedPair => [n, leader]),
          description: `${names(others)} -> ${name(leader)}`,
        };
      return {
        pairs: others.map((n): DirectedPair => [leader, n]),
        description: `${name(leader)} -> ${names(others)}`,
      };
    }
  }
}

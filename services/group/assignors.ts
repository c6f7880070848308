// Server-side partition assignors of consumer groups (KIP-848): "uniform" (balanced and sticky:
// a partition stays with its previous owner unless the balance needs it elsewhere) and "range"
// (per topic, contiguous ranges in member-id order, so co-partitioned topics line up). Pure and
// deterministic: the state machine runs them while applying, on every replica.

export const ASSIGNOR_NAMES = ["uniform", "range"] as const;
export type AssignorName = (typeof ASSIGNOR_NAMES)[number];
export const DEFAULT_ASSIGNOR: AssignorName = "uniform";

export interface AssignorMember {
  readonly memberId: string;
  /** Topics the member is subscribed to (already resolved from a regular expression). */
  readonly topics: ReadonlySet<string>;
}

/** topic → partition numbers, ascending. */
export type Assignment = Map<string, number[]>;

export interface AssignorInput {
  readonly members: readonly AssignorMember[];
  /** topic → partition count, for the subscribed topics that exist. */
  readonly topics: ReadonlyMap<string, number>;
  /** The previous target assignment (memberId → assignment), for stickiness. */
  readonly previous: ReadonlyMap<string, Assignment>;
}

export function isAssignorName(name: string): name is AssignorName {
  return (ASSIGNOR_NAMES as readonly string[]).includes(name);
}

export function assign(name: AssignorName, input: AssignorInput): Map<string, Assignment> {
  return name === "range" ? rangeAssign(input) : uniformAssign(input);
}

function sortedMembers(members: readonly AssignorMember[]): AssignorMember[] {
  return [...members].sort((a, b) =>
    a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0,
  );
}

function sortedTopics(topics: ReadonlyMap<string, number>): Array<[string, number]> {
  return [...topics].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

function toAssignments(
  members: readonly AssignorMember[],
  owned: Map<string, Array<[string, number]>>,
): Map<string, Assignment> {
  const out = new Map<string, Assignment>();
  for (const m of sortedMembers(members)) {
    const a: Assignment = new Map();
    const list = (owned.get(m.memberId) ?? [])
      .slice()
      .sort(([t1, p1], [t2, p2]) => (t1 < t2 ? -1 : t1 > t2 ? 1 : p1 - p2));
    for (const [topic, partition] of list) {
      let ps = a.get(topic);
      if (!ps) a.set(topic, (ps = []));
      ps.push(partition);
    }
    out.set(m.memberId, a);
  }
  return out;
}

/** Per topic: members subscribed to it in id order, partitions split in contiguous ranges. */
export function rangeAssign(input: AssignorInput): Map<string, Assignment> {
  const members = sortedMembers(input.members);
  const owned = new Map<string, Array<[string, number]>>();
  for (const [topic, count] of sortedTopics(input.topics)) {
    const eligible = members.filter((m) => m.topics.has(topic));
    if (eligible.length === 0) continue;
    const base = Math.floor(count / eligible.length);
    const extra = count % eligible.length;
    let next = 0;
    eligible.forEach((m, i) => {
      const n = base + (i < extra ? 1 : 0);
      let list = owned.get(m.memberId);
      if (!list) owned.set(m.memberId, (list = []));
      for (let k = 0; k < n; k++) list.push([topic, next++]);
    });
  }
  return toAssignments(members, owned);
}

/**
 * Keeps every previous placement that is still valid, gives each unplaced partition to the
 * eligible member holding fewest partitions, then moves partitions from a member to an
 * eligible one holding at least two fewer until none can move. Each move lowers the sum of
 * squared counts, so the loop ends; with equal subscriptions counts differ by at most one.
 */
export function uniformAssign(input: AssignorInput): Map<string, Assignment> {
  const members = sortedMembers(input.members);
  const count = new Map<string, number>(members.map((m) => [m.memberId, 0]));
  const owner = new Map<string, string>(); // "topic\0partition" → memberId
  const owned = new Map<string, Array<[string, number]>>(members.map((m) => [m.memberId, []]));
  const give = (memberId: string, topic: string, partition: number): void => {
    owner.set(`${topic}\u0000${partition}`, memberId);
    owned.get(memberId)!.push([topic, partition]);
    count.set(memberId, count.get(memberId)! + 1);
  };
  // 1. Stickiness: previous placements that are still valid.
  for (const m of members) {
    for (const [topic, partitions] of input.previous.get(m.memberId) ?? []) {
      const n = input.topics.get(topic);
      if (n === undefined || !m.topics.has(topic)) continue;
      for (const p of partitions)
        if (p < n && !owner.has(`${topic}\u0000${p}`)) give(m.memberId, topic, p);
    }
  }
  // 2. Unplaced partitions to the least loaded eligible member (ties: smallest member id).
  const topics = sortedTopics(input.topics);
  const eligibleOf = new Map(topics.map(([t]) => [t, members.filter((m) => m.topics.has(t))]));
  for (const [topic, n] of topics) {
    const eligible = eligibleOf.get(topic)!;
    if (eligible.length === 0) continue;
    for (let p = 0; p < n; p++) {
      if (owner.has(`${topic}\u0000${p}`)) continue;
      let best = eligible[0]!;
      for (const m of eligible) if (count.get(m.memberId)! < count.get(best.memberId)!) best = m;
      give(best.memberId, topic, p);
    }
  }
  // 3. Balance: move from the most loaded to an eligible member with at least two fewer.
  for (let moved = true; moved;) {
    moved = false;
    const byLoad = [...members].sort(
      (a, b) =>
        count.get(b.memberId)! - count.get(a.memberId)! || (a.memberId < b.memberId ? -1 : 1),
    );
    for (const from of byLoad) {
      const list = owned.get(from.memberId)!;
      // Newest placements (the end of the list) move first: older ones stay sticky.
      for (let i = list.length - 1; i >= 0 && !moved; i--) {
        const [topic, partition] = list[i]!;
        let target: AssignorMember | undefined;
        for (const m of eligibleOf.get(topic) ?? []) {
          if (count.get(m.memberId)! + 2 > count.get(from.memberId)!) continue;
          if (!target || count.get(m.memberId)! < count.get(target.memberId)!) target = m;
        }
        if (!target) continue;
        list.splice(i, 1);
        count.set(from.memberId, count.get(from.memberId)! - 1);
        give(target.memberId, topic, partition);
        moved = true;
      }
      if (moved) break;
    }
  }
  return toAssignments(members, owned);
}

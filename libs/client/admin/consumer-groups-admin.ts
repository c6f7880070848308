// Consumer-group administration (kafka-consumer-groups.sh, rpk group): list the groups of
// every broker, describe one (members, assignments, and per partition the committed offset,
// log end offset and lag), delete a group or some of its offsets, and reset the offsets of an
// empty group (to earliest, latest, an offset, a timestamp, or shifted by N; planned first,
// applied with execute). Offsets are reset with a simple commit (generation -1), which the
// coordinator only accepts while the group has no members.
import { TernError, type ErrorName } from "../../common/errors.js";
import { toClientError } from "../errors.js";
import type { Transport } from "../network/transport.js";
import type { CoordinatorFinder } from "../network/coordinator-finder.js";
import { firstPartitionError, leaderCall } from "../network/leader-call.js";
import type { MetadataCache } from "../network/metadata-cache.js";
import type { TopicPartition } from "../consumer/consumer.js";

export interface GroupsAdminContext {
  readonly transport: Transport;
  readonly metadata: MetadataCache;
  readonly finder: CoordinatorFinder;
  readonly requestTimeoutMs: number;
}

export interface GroupListing {
  readonly groupId: string;
  /** "consumer" (members, KIP-848) or "simple" (committed offsets only). */
  readonly type: string;
  readonly state: string;
  readonly members: number;
}

export interface GroupMemberDescription {
  readonly memberId: string;
  readonly instanceId: string;
  readonly clientId: string;
  readonly clientHost: string;
  readonly memberEpoch: number;
  readonly state: string;
  readonly subscribedTopics: string[];
  readonly subscribedRegex: string;
  readonly assignment: TopicPartition[];
  readonly pendingRevocation: TopicPartition[];
}

export interface PartitionLag extends TopicPartition {
  /** null when the group has no committed offset here. */
  readonly committed: bigint | null;
  /** null when the partition's leader could not be asked. */
  readonly logEndOffset: bigint | null;
  /** logEndOffset - committed (logEndOffset when nothing is committed); null when unknown. */
  readonly lag: bigint | null;
  /** The member owning it now, "" when none. */
  readonly memberId: string;
  readonly clientId: string;
  readonly clientHost: string;
}

export interface GroupDescription {
  readonly groupId: string;
  readonly type: string;
  readonly state: string;
  readonly groupEpoch: number;
  readonly assignmentEpoch: number;
  readonly assignor: string;
  readonly rebalances: number;
  readonly coordinator: number;
  readonly members: GroupMemberDescription[];
  readonly partitions: PartitionLag[];
  readonly totalLag: bigint;
}

export type ResetSpec =
  | { readonly to: "earliest" }
  | { readonly to: "latest" }
  | { readonly to: "offset"; readonly offset: bigint }
  | { readonly to: "timestamp"; readonly timestampMs: number }
  | { readonly to: "shift"; readonly by: bigint };

export interface ResetPlanRow extends TopicPartition {
  readonly current: bigint | null;
  readonly target: bigint;
}

const tps = (
  rows: ReadonlyArray<{ topic: string; partitions: number[] }> | undefined,
): TopicPartition[] =>
  (rows ?? []).flatMap((r) =>
    (r.partitions ?? []).map((p) => ({ topic: String(r.topic), partition: Number(p) })),
  );
const tpKey = (tp: TopicPartition): string => `${tp.topic}\u0000${tp.partition}`;

export async function listGroups(
  ctx: GroupsAdminContext,
): Promise<{ groups: GroupListing[]; unreachableBrokers: string[] }> {
  const m = await ctx.metadata.refresh();
  const brokers = m.nodes.filter((n) => n.role === "broker" && n.alive);
  const unreachable: string[] = [];
  const byId = new Map<string, GroupListing>();
  await Promise.all(
    brokers.map(async (b) => {
      try {
        const r = await ctx.transport.call(
          "GroupCoordinator",
          b.address,
          "ListGroups",
          {},
          ctx.requestTimeoutMs,
        );
        for (const g of r.groups ?? [])
          byId.set(String(g.groupId), {
            groupId: String(g.groupId),
            type: String(g.type),
            state: String(g.state),
            members: Number(g.members),
          });
      } catch {
        unreachable.push(b.address);
      }
    }),
  );
  return {
    groups: [...byId.values()].sort((a, b) => a.groupId.localeCompare(b.groupId)),
    unreachableBrokers: unreachable.sort(),
  };
}

async function committedOffsets(
  ctx: GroupsAdminContext,
  groupId: string,
  partitions?: TopicPartition[],
): Promise<Map<string, { tp: TopicPartition; offset: bigint | null }>> {
  const res = await ctx.finder.call(
    "GROUP",
    groupId,
    "GroupCoordinator",
    "OffsetFetch",
    { groupId, partitions: partitions ?? [], requireStable: false },
    { requestTimeoutMs: ctx.requestTimeoutMs },
  );
  const out = new Map<string, { tp: TopicPartition; offset: bigint | null }>();
  for (const p of res.partitions ?? []) {
    const tp = { topic: String(p.topic), partition: Number(p.partition) };
    const offset = BigInt(p.offset);
    out.set(tpKey(tp), { tp, offset: offset < 0n ? null : offset });
  }
  return out;
}

async function listOffset(
  ctx: GroupsAdminContext,
  tp: TopicPartition,
  timestampMs: bigint,
): Promise<bigint | null> {
  try {
    const request = {
      isolationLevel: "READ_UNCOMMITTED" as const,
      partitions: [{ topic: tp.topic, partition: tp.partition, timestampMs: String(timestampMs) }],
    };
    const res = await leaderCall(
      ctx.transport,
      ctx.metadata,
      tp.topic,
      tp.partition,
      "ListOffsets",
      request,
      firstPartitionError,
    );
    const offset = BigInt(res.partitions[0].offset);
    return offset < 0n ? null : offset;
  } catch {
    return null;
  }
}

export async function describeGroup(
  ctx: GroupsAdminContext,
  groupId: string,
): Promise<GroupDescription> {
  const d = await ctx.finder.call(
    "GROUP",
    groupId,
    "GroupCoordinator",
    "ConsumerGroupDescribe",
    { groupId },
    { requestTimeoutMs: ctx.requestTimeoutMs },
  );
  const members: GroupMemberDescription[] = (d.members ?? []).map((m) => ({
    memberId: String(m.memberId),
    instanceId: String(m.instanceId ?? ""),
    clientId: String(m.clientId ?? ""),
    clientHost: String(m.clientHost ?? ""),
    memberEpoch: Number(m.memberEpoch),
    state: String(m.state),
    subscribedTopics: (m.subscribedTopicNames ?? []).map(String),
    subscribedRegex: String(m.subscribedTopicRegex ?? ""),
    assignment: tps(m.assignment),
    pendingRevocation: tps(m.pendingRevocation),
  }));
  const owner = new Map<string, GroupMemberDescription>();
  for (const m of members)
    for (const tp of [...m.assignment, ...m.pendingRevocation]) owner.set(tpKey(tp), m);
  const committed = await committedOffsets(ctx, groupId);
  const all = new Map<string, TopicPartition>();
  for (const { tp } of committed.values()) all.set(tpKey(tp), tp);
  for (const m of members)
    for (const tp of [...m.assignment, ...m.pendingRevocation]) all.set(tpKey(tp), tp);
  const sorted = [...all.values()].sort(
    (a, b) => a.topic.localeCompare(b.topic) || a.partition - b.partition,
  );
  const partitions = await Promise.all(
    sorted.map(async (tp): Promise<PartitionLag> => {
      const c = committed.get(tpKey(tp))?.offset ?? null;
      const end = await listOffset(ctx, tp, -1n);
      const m = owner.get(tpKey(tp));
      const lag = end === null ? null : c === null ? end : end > c ? end - c : 0n;
      return {
        ...tp,
        committed: c,
        logEndOffset: end,
        lag,
        memberId: m?.memberId ?? "",
        clientId: m?.clientId ?? "",
        clientHost: m?.clientHost ?? "",
      };
    }),
  );
  return {
    groupId,
    type: String(d.type),
    state: String(d.state),
    groupEpoch: Number(d.groupEpoch),
    assignmentEpoch: Number(d.assignmentEpoch),
    assignor: String(d.assignor ?? ""),
    rebalances: Number(d.rebalances ?? 0),
    coordinator: Number(d.coordinator ?? -1),
    members,
    partitions,
    totalLag: partitions.reduce((n, p) => n + (p.lag ?? 0n), 0n),
  };
}

export async function deleteGroup(ctx: GroupsAdminContext, groupId: string): Promise<void> {
  await ctx.finder.call(
    "GROUP",
    groupId,
    "GroupCoordinator",
    "DeleteGroups",
    { groupId },
    { requestTimeoutMs: ctx.requestTimeoutMs },
  );
}

export async function deleteGroupOffsets(
  ctx: GroupsAdminContext,
  groupId: string,
  partitions: readonly TopicPartition[],
): Promise<Array<TopicPartition & { error: ErrorName }>> {
  const r = await ctx.finder.call(
    "GROUP",
    groupId,
    "GroupCoordinator",
    "OffsetDelete",
    { groupId, partitions: [...partitions] },
    { requestTimeoutMs: ctx.requestTimeoutMs },
  );
  return (r.partitions ?? []).map((p) => ({
    topic: String(p.topic),
    partition: Number(p.partition),
    error: p.errorCode as ErrorName,
  }));
}

/**
 * The new offsets of the partitions (clamped to each partition's [earliest, latest]); applied
 * only with execute, and only while the group has no members (NON_EMPTY_GROUP otherwise).
 */
export async function resetGroupOffsets(
  ctx: GroupsAdminContext,
  groupId: string,
  partitions: readonly TopicPartition[],
  spec: ResetSpec,
  execute: boolean,
): Promise<ResetPlanRow[]> {
  let state = "EMPTY";
  try {
    const d = await ctx.finder.call(
      "GROUP",
      groupId,
      "GroupCoordinator",
      "ConsumerGroupDescribe",
      { groupId },
      { requestTimeoutMs: ctx.requestTimeoutMs },
    );
    if ((d.members ?? []).length > 0) state = String(d.state);
  } catch (e) {
    if (toClientError(e).code !== "GROUP_ID_NOT_FOUND") throw e;
  }
  if (state !== "EMPTY")
    throw new TernError(
      "NON_EMPTY_GROUP",
      `group ${JSON.stringify(groupId)} is ${state}: stop its consumers before resetting offsets`,
    );
  const committed = await committedOffsets(ctx, groupId, [...partitions]);
  const plan = await Promise.all(
    partitions.map(async (tp): Promise<ResetPlanRow> => {
      const current = committed.get(tpKey(tp))?.offset ?? null;
      const earliest = (await listOffset(ctx, tp, -2n)) ?? 0n;
      const latest = (await listOffset(ctx, tp, -1n)) ?? earliest;
      let target: bigint;
      switch (spec.to) {
        case "earliest":
          target = earliest;
          break;
        case "latest":
          target = latest;
          break;
        case "offset":
          target = spec.offset;
          break;
        // The first offset at or after the time; the end when every record is older.
        case "timestamp":
          target = (await listOffset(ctx, tp, BigInt(spec.timestampMs))) ?? latest;
          break;
        case "shift":
          target = (current ?? earliest) + spec.by;
          break;
      }
      if (target < earliest) target = earliest;
      if (target > latest) target = latest;
      return { ...tp, current, target };
    }),
  );
  if (execute && plan.length > 0) {
    const request = {
      groupId,
      generationId: -1,
      memberId: "",
      groupInstanceId: "",
      partitions: plan.map((p) => ({
        topic: p.topic,
        partition: p.partition,
        offset: String(p.target),
        leaderEpoch: -1,
        metadata: "",
      })),
    };
    const r = await ctx.finder.call("GROUP", groupId, "GroupCoordinator", "OffsetCommit", request, {
      requestTimeoutMs: ctx.requestTimeoutMs,
    });
    const failed = (r.partitions ?? []).find((p) => p.errorCode !== "NONE");
    if (failed)
      throw new TernError(
        failed.errorCode as ErrorName,
        `${failed.topic}-${failed.partition}: ${failed.errorMessage}`,
      );
  }
  return plan;
}

// The runner's own connections to the cluster: a metadata cache (refreshed at most every
// METADATA_TTL_MS, at once after a leadership error), broker and group-coordinator clients per
// address, and the coordinator client that follows FindCoordinator. Plain promise clients over
// the gRPC contract; every call carries a deadline.
import { TernError, type ErrorName } from "../../../libs/common/errors.js";
import { fromGrpcError } from "../../../libs/common/grpc-errors.js";
import { until } from "../../../libs/common/poll.js";
import { partitionFor, OFFSETS_PARTITIONS_DEFAULT } from "../../../libs/common/hash.js";
import { loadTernProto } from "../../../libs/common/proto.js";
import type { ControllerClient } from "../../../libs/metadata/controller-client.js";
import { CONSUMER_OFFSETS_TOPIC, type ClusterMetadata } from "../../../libs/metadata/types.js";
import { BrokerClient } from "../../../services/broker/broker-client.js";
import { CoordinatorClient } from "../../../services/coordinator/coordinator-client.js";
import { GrpcClientCache } from "../../../libs/grpc/grpc-client-cache.js";
import type { GroupCoordinatorClient } from "../../../libs/common/proto-types/index.js";
import { unaryCall, type RequestOf, type ResponseOf } from "../../../libs/grpc/unary-call.js";
import { processCredentials } from "../../../libs/server/tls/credentials.js";

const METADATA_TTL_MS = 1_000;
const GROUP_CALL_DEADLINE_MS = 10_000;
const FETCH_DEADLINE_MS = 10_000;

/** Answers after which a call is tried again (leader moved, node busy or unreachable). */
export const RETRIABLE: ReadonlySet<string> = new Set([
  "NOT_LEADER_OR_FOLLOWER",
  "REQUEST_TIMED_OUT",
  "LEADER_NOT_AVAILABLE",
  "NOT_ENOUGH_REPLICAS",
  "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
  "COORDINATOR_NOT_AVAILABLE",
  "COORDINATOR_LOAD_IN_PROGRESS",
  "NOT_COORDINATOR",
  "CONCURRENT_TRANSACTIONS",
  "NETWORK_EXCEPTION",
  "UNKNOWN_TOPIC_OR_PARTITION",
  "SHUTTING_DOWN",
  "KAFKA_STORAGE_ERROR",
  "UNKNOWN_SERVER_ERROR",
]);

export interface Fetched {
  readonly records: Array<readonly [number, string]>;
  readonly highWatermark: number;
  readonly lastStableOffset: number;
  readonly nextOffset: number;
}

export class ClusterClients {
  readonly coordinators: CoordinatorClient;
  /** Broker and group-coordinator channels (both services live on broker nodes). */
  private readonly clients = new GrpcClientCache({ credentials: processCredentials() });
  private cached: { at: number; metadata: ClusterMetadata } | undefined;
  private refreshing: Promise<ClusterMetadata> | undefined;
  private readonly lastHighWatermark = new Map<string, number>();

  constructor(
    readonly controller: ControllerClient,
    coordinatorAddresses: readonly string[],
  ) {
    this.coordinators = new CoordinatorClient(coordinatorAddresses);
  }

  close(): void {
    this.coordinators.close();
    this.clients.close();
  }

  async metadata(fresh = false): Promise<ClusterMetadata> {
    const c = this.cached;
    if (!fresh && c && Date.now() - c.at < METADATA_TTL_MS) return c.metadata;
    this.refreshing ??= this.controller.metadata().then(
      (metadata) => {
        this.cached = { at: Date.now(), metadata };
        this.refreshing = undefined;
        return metadata;
      },
      (e) => {
        this.refreshing = undefined;
        throw e;
      },
    );
    return this.refreshing;
  }

  invalidate(): void {
    this.cached = undefined;
  }

  /** Leader node id and address of a partition, or undefined when there is none alive now. */
  async leader(
    topic: string,
    partition: number,
    role: "broker" | "coordinator" = "broker",
  ): Promise<{ nodeId: number; address: string } | undefined> {
    const m = await this.metadata();
    const p = m.topics
      .find((t) => t.name === topic)
      ?.partitions.find((x) => x.partition === partition);
    if (!p || p.leader < 0) return undefined;
    const node = m.nodes.find((n) => n.role === role && n.nodeId === p.leader && n.alive);
    return node ? { nodeId: node.nodeId, address: node.address } : undefined;
  }

  broker(address: string): BrokerClient {
    return new BrokerClient(address, this.clients);
  }

  /** One read_committed fetch from the partition leader at offset (throws TernError on failure). */
  async fetchCommitted(topic: string, partition: number, offset: number): Promise<Fetched> {
    const leader = await this.leader(topic, partition);
    if (!leader)
      throw new TernError("LEADER_NOT_AVAILABLE", `${topic}/${partition} has no live leader`);
    const r = await this.broker(leader.address).fetch(
      {
        maxWaitMs: 0,
        isolationLevel: "READ_COMMITTED",
        partitions: [{ topic, partition, fetchOffset: String(offset) }],
      },
      FETCH_DEADLINE_MS,
    );
    const p = r.partitions[0];
    if (p.errorCode !== "NONE") {
      this.invalidate();
      throw new TernError(p.errorCode as ErrorName, p.errorMessage);
    }
    const records: Array<readonly [number, string]> = [];
    for (const b of p.batches ?? [])
      for (const rec of b.records ?? [])
        records.push([Number(rec.offset), Buffer.from(rec.value).toString()] as const);
    const last = records.length > 0 ? records[records.length - 1]![0] + 1 : offset;
    const next = Math.max(last, Number(p.nextFetchOffset ?? 0));
    return {
      records,
      highWatermark: Number(p.highWatermark),
      lastStableOffset: Number(p.lastStableOffset),
      nextOffset: next,
    };
  }

  /** High watermark and LSO of a partition: a 1-byte fetch at the last high watermark seen. */
  async stableOffsets(
    topic: string,
    partition: number,
  ): Promise<{ highWatermark: number; lastStableOffset: number }> {
    const id = `${topic}/${partition}`;
    const leader = await this.leader(topic, partition);
    if (!leader) throw new TernError("LEADER_NOT_AVAILABLE", `${id} has no live leader`);
    const from = this.lastHighWatermark.get(id) ?? 0;
    const r = await this.broker(leader.address).fetch(
      {
        maxWaitMs: 0,
        isolationLevel: "READ_COMMITTED",
        partitions: [{ topic, partition, fetchOffset: String(from), partitionMaxBytes: 1 }],
      },
      FETCH_DEADLINE_MS,
    );
    const p = r.partitions[0];
    if (p.errorCode !== "NONE") {
      this.lastHighWatermark.delete(id);
      this.invalidate();
      throw new TernError(p.errorCode as ErrorName, p.errorMessage);
    }
    this.lastHighWatermark.set(id, Number(p.highWatermark));
    return { highWatermark: Number(p.highWatermark), lastStableOffset: Number(p.lastStableOffset) };
  }

  /** A GroupCoordinator call on the broker leading the group's __consumer_offsets partition. */
  async groupCall<M extends "OffsetFetch" | "TxnOffsetCommit" | "OffsetCommit">(
    groupId: string,
    method: M,
    request: RequestOf<GroupCoordinatorClient, M>,
  ): Promise<ResponseOf<GroupCoordinatorClient, M>> {
    const leader = await this.leader(
      CONSUMER_OFFSETS_TOPIC,
      partitionFor(groupId, OFFSETS_PARTITIONS_DEFAULT),
    );
    if (!leader)
      throw new TernError("COORDINATOR_NOT_AVAILABLE", `group ${groupId} has no live coordinator`);
    const c = this.clients.get<GroupCoordinatorClient>(
      "GroupCoordinator",
      loadTernProto().grpc.tern.v1.GroupCoordinator,
      leader.address,
    );
    return unaryCall(
      c,
      method,
      { groupId, ...request },
      { deadline: Date.now() + GROUP_CALL_DEADLINE_MS },
    ).catch((e: unknown) => {
      this.invalidate();
      throw fromGrpcError(e);
    });
  }
}

export function errorName(e: unknown): string {
  return e instanceof TernError ? e.errorName : fromGrpcError(e).errorName;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls probe until it answers a value; undefined after timeoutMs. */
export function pollUntil<T>(
  timeoutMs: number,
  intervalMs: number,
  probe: () => Promise<T | undefined>,
): Promise<T | undefined> {
  return until("a probe's answer", timeoutMs, probe, { intervalMs }).catch(() => undefined);
}

/** Creates topics (RF 3) and waits, bounded, until every partition has a leader. */
export async function createTopicsAndWait(
  clients: ClusterClients,
  topics: ReadonlyArray<{
    name: string;
    partitions: number;
    config?: Readonly<Record<string, string>>;
  }>,
  timeoutMs: number,
): Promise<void> {
  const created = await pollUntil(timeoutMs, 500, async () => {
    const out = await clients.controller.createTopics(
      topics.map((t) => ({
        name: t.name,
        partitions: t.partitions,
        replicationFactor: 3,
        config: t.config === undefined ? undefined : { ...t.config },
      })),
    );
    return out.every((o) => !o.error || o.error.errorName === "TOPIC_ALREADY_EXISTS")
      ? true
      : undefined;
  });
  if (!created) throw new Error(`could not create topics ${topics.map((t) => t.name).join(", ")}`);
  const led = await pollUntil(timeoutMs, 300, async () => {
    for (const t of topics)
      for (let p = 0; p < t.partitions; p++)
        if (!(await clients.leader(t.name, p))) return undefined;
    return true;
  });
  if (!led) throw new Error("the run's topics got no leaders in time");
}

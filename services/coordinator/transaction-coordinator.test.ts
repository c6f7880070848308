import { afterEach, describe, expect, it } from "vitest";
import { ManualClock } from "../../libs/runtime/testing/manual-clock.js";
import { systemClock } from "../../libs/runtime/system-clock.js";
import { partitionFor } from "../../libs/common/hash.js";
import { silentLogger } from "../../libs/common/logger.js";
import { SeededRandom } from "../../libs/common/prng.js";
import { LocalReplicatedLog } from "./testing/local-replicated-log.js";
import { drive, runUntil, turns } from "../../libs/common/testing/virtual-time.js";
import { ProducerIdManager } from "./producer-id-manager.js";
import { TransactionCoordinator, type CoordinatorLimits } from "./transaction-coordinator.js";
import {
  TransactionMarkerChannelManager,
  type WireTxnMarker,
  type WireWriteTxnMarkersResponse,
} from "./transaction-marker-channel-manager.js";
import { encodeEntry } from "./transaction-log.js";
import { PRODUCER_EPOCH_MAX } from "./transaction-metadata.js";
import { TransactionStateMachine } from "./transaction-state-machine.js";
import type { RaftGroup } from "../../libs/raft-host/api.js";
import type { ClusterMetadata } from "../../libs/metadata/types.js";
import { createCoordinatorHandlers } from "./coordinator-handlers.js";

/** A ManualClock whose wall clock runs stepMs off its monotonic clock, as a host's clock after a step. */
class SteppingClock extends ManualClock {
  stepMs = 0;
  override nowMs(): number {
    return super.nowMs() + this.stepMs;
  }
}

const TID = "my-txn-id"; // partition 11 of 50
const P = partitionFor(TID, 50);
/** The view the coordinators hash ids by: both internal topics, 50 partitions each. */
const INTERNAL_TOPICS: ClusterMetadata = {
  version: "1",
  controllerLeader: 0,
  nodes: [],
  topics: (["__transaction_state", "__consumer_offsets"] as const).map((name) => ({
    name,
    internal: true,
    role: name === "__transaction_state" ? ("coordinator" as const) : ("broker" as const),
    config: {},
    partitions: Array.from({ length: 50 }, (_, partition) => ({
      topic: name,
      partition,
      replicas: [0],
      leader: 0,
      leaderTerm: 1,
    })),
  })),
};
const tp = (topic: string, partition: number) => ({ topic, partition });

/** Brokers that apply markers per partition: what a read_committed reader would see. */
class FakeBrokers {
  constructor(private readonly clock: ManualClock) {}
  readonly written: Array<{ address: string; marker: WireTxnMarker }> = [];
  requests = 0;
  down = false;
  /** Answer this code for partitions of this topic (once per entry). */
  readonly refusals: Array<{ topic: string; code: string }> = [];
  delayMs = 0;
  transport = async (
    address: string,
    markers: WireTxnMarker[],
  ): Promise<WireWriteTxnMarkersResponse> => {
    this.requests++;
    if (this.delayMs > 0)
      await new Promise((r) => this.clock.setTimeout(() => r(undefined), this.delayMs));
    if (this.down) throw Object.assign(new Error("connect ECONNREFUSED"), { code: 14 });
    return {
      results: markers.map((m) => ({
        producerId: m.producerId,
        partitions: m.partitions.map((p) => {
          const i = this.refusals.findIndex((r) => r.topic === p.topic);
          if (i >= 0)
            return {
              topicPartition: p,
              errorCode: this.refusals.splice(i, 1)[0]!.code,
              errorMessage: "refused",
            };
          this.written.push({ address, marker: { ...m, partitions: [p] } });
          return { topicPartition: p, errorCode: "NONE", errorMessage: "" };
        }),
      })),
    };
  };
  markersFor(topic: string, partition: number): WireTxnMarker[] {
    return this.written
      .filter(
        (w) =>
          w.marker.partitions[0]!.topic === topic &&
          w.marker.partitions[0]!.partition === partition,
      )
      .map((w) => w.marker);
  }
}

interface Node {
  coordinator: TransactionCoordinator;
  markers: TransactionMarkerChannelManager;
  group: RaftGroup;
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

function cluster(
  options: {
    replicas?: number;
    limits?: Partial<CoordinatorLimits>;
    clock?: ManualClock;
    markerQueueMax?: number;
    partitionExists?: (p: { topic: string; partition: number }) => boolean | undefined;
  } = {},
) {
  const clock = options.clock ?? new ManualClock(1_000_000);
  const brokers = new FakeBrokers(clock);
  const log = new LocalReplicatedLog(`__transaction_state/${P}`);
  let nextBlock = 0n;
  const nodes: Node[] = [];
  for (let id = 0; id < (options.replicas ?? 1); id++) {
    const sm = new TransactionStateMachine(P);
    const group = log.addReplica(id, sm);
    const markers = new TransactionMarkerChannelManager({
      transport: brokers.transport,
      leaderOf: (p) => (p.topic === "gone" ? "no-topic" : { address: `broker-${p.partition % 2}` }),
      confirmGone: async (p) => p.topic === "gone",
      logger: silentLogger(),
      random: new SeededRandom(id),
      scheduler: clock,
      backoffInitialMs: 5,
      backoffMaxMs: 40,
      ...(options.markerQueueMax !== undefined
        ? { partitionsQueuedMax: options.markerQueueMax }
        : {}),
    });
    const producerIds = new ProducerIdManager({
      nodeId: id,
      logger: silentLogger(),
      clock: systemClock,
      allocate: async () => {
        const b = { firstProducerId: nextBlock, count: 1000 };
        nextBlock += 1000n;
        return b;
      },
    });
    const coordinator = new TransactionCoordinator({
      logger: silentLogger(),
      clock,
      leaderChanges: log.leaderChanges(id),
      producerIds,
      markers,
      limits: { timeoutCheckIntervalMs: 10, completionWaitMs: 2_000, ...options.limits },
      metadata: () => INTERNAL_TOPICS,
      ...(options.partitionExists ? { partitionExists: options.partitionExists } : {}),
    });
    coordinator.addPartition(P, group, sm);
    nodes.push({ coordinator, markers, group });
    cleanups.push(async () => {
      await coordinator.close();
      markers.close();
    });
  }
  return { clock, brokers, log, nodes };
}

async function leaderReady(c: ReturnType<typeof cluster>, node = 0) {
  c.log.elect(node);
  await runUntil(c.clock, "load", () => c.nodes[node]!.coordinator.isLoaded(P));
  return c.nodes[node]!.coordinator;
}

const init = (
  co: TransactionCoordinator,
  producerId = -1n,
  producerEpoch = -1,
  transactionTimeoutMs = 0,
) => co.initProducerId({ transactionalId: TID, transactionTimeoutMs, producerId, producerEpoch });

/** A loaded leader whose new producer (epoch 0) has added a/0; `add` adds more at any epoch. */
async function withA0Added(c: ReturnType<typeof cluster>) {
  const co = await leaderReady(c);
  const { producerId } = await init(co);
  const add = (producerEpoch: number, partitions: Array<{ topic: string; partition: number }>) =>
    co.addPartitionsToTxn({
      transactionalId: TID,
      producerId,
      producerEpoch,
      partitions,
      verifyOnly: false,
    });
  await add(0, [tp("a", 0)]);
  return { co, producerId, add };
}

const state = (co: TransactionCoordinator, transactionalId = TID) =>
  co.describeTransactions([transactionalId])[0]!;
/** Another id on the same __transaction_state partition. */
const TID2 = Array.from({ length: 10_000 }, (_, i) => `other-${i}`).find(
  (id) => partitionFor(id, 50) === P,
)!;

describe("TransactionCoordinator", () => {
  it("a request between leaders waits (bounded) for the election and the load, then is answered by what it finds", async () => {
    const c = cluster({ replicas: 2 });
    const [n0, n1] = [c.nodes[0]!.coordinator, c.nodes[1]!.coordinator];
    const waitMs = 1_000; // DEFAULT_LIMITS.leadershipWaitMs
    // No leader yet: the request waits the whole bound, then finds no leadership here.
    let t0 = c.clock.monotonicMs();
    await expect(drive(c.clock, init(n0))).rejects.toMatchObject({
      errorName: "NOT_COORDINATOR",
    });
    expect(c.clock.monotonicMs() - t0).toBe(waitMs);
    // Elected, loading (commits held): a request waits for the load and then succeeds.
    c.log.pauseCommits();
    c.log.elect(0);
    const during = init(n0);
    await turns();
    c.clock.advance(300);
    await turns();
    c.log.resumeCommits();
    await expect(drive(c.clock, during)).resolves.toEqual({ producerId: 0n, producerEpoch: 0 });
    // A load that does not finish within the bound: COORDINATOR_LOAD_IN_PROGRESS then.
    c.log.pauseCommits();
    c.log.elect(1);
    t0 = c.clock.monotonicMs();
    await expect(drive(c.clock, init(n1))).rejects.toMatchObject({
      errorName: "COORDINATOR_LOAD_IN_PROGRESS",
    });
    expect(c.clock.monotonicMs() - t0).toBe(waitMs);
    // The other replica, asked during an election, answers as soon as a leader is known.
    c.log.kill(1);
    const asked = init(n0);
    await turns();
    c.clock.advance(200);
    await turns();
    t0 = c.clock.monotonicMs();
    c.log.elect(0);
    c.log.resumeCommits();
    await expect(drive(c.clock, asked)).resolves.toEqual({ producerId: 0n, producerEpoch: 1 });
    expect(c.clock.monotonicMs() - t0).toBeLessThan(waitMs);
    // A replica that knows another leader is answered at once, without waiting.
    const follower = cluster({ replicas: 2 });
    follower.log.elect(1);
    t0 = follower.clock.monotonicMs();
    await expect(init(follower.nodes[0]!.coordinator)).rejects.toMatchObject({
      errorName: "NOT_COORDINATOR",
    });
    expect(follower.clock.monotonicMs()).toBe(t0);
  });

  it("FindCoordinator on a replica between leaders names the next leader, not the one just lost that the controller still shows", async () => {
    const c = cluster({ replicas: 2 });
    // The controller's view still names coordinator 1, which has just died.
    const metadata: ClusterMetadata = {
      version: "1",
      controllerLeader: 0,
      nodes: [0, 1].map((nodeId) => ({
        nodeId,
        role: "coordinator" as const,
        address: `coordinator-${nodeId}`,
        alive: true,
        incarnation: "1",
      })),
      topics: [
        {
          name: "__transaction_state",
          internal: true,
          role: "coordinator",
          config: {},
          partitions: Array.from({ length: 50 }, (_, partition) => ({
            topic: "__transaction_state",
            partition,
            replicas: [0, 1],
            leader: 1,
            leaderTerm: 1,
          })),
        },
      ],
    };
    const handlers = createCoordinatorHandlers({
      coordinator: c.nodes[0]!.coordinator,
      metadata: () => metadata,
      self: { nodeId: 0, address: "coordinator-0" },
    });
    const find = () => handlers.FindCoordinator({ key: TID, keyType: "TRANSACTION" });
    c.log.elect(1);
    await runUntil(c.clock, "load", () => c.nodes[1]!.coordinator.isLoaded(P));
    expect((await find()).coordinator?.nodeId).toBe(1);
    c.log.kill(1);
    const asked = find();
    await turns();
    c.clock.advance(150);
    await turns();
    const t0 = c.clock.monotonicMs();
    c.log.elect(0);
    const answer = await drive(c.clock, asked);
    expect(answer).toMatchObject({ errorCode: "NONE", partition: P, coordinator: { nodeId: 0 } });
    expect(c.nodes[0]!.coordinator.isLoaded(P)).toBe(true);
    expect(c.clock.monotonicMs() - t0).toBeLessThan(1_000);
  });

  it("InitProducerId: fresh id, epoch bump, recognised retry, idempotent-only ids, timeout validation", async () => {
    const c = cluster();
    const co = await leaderReady(c);
    expect(await init(co)).toEqual({ producerId: 0n, producerEpoch: 0 });
    expect(await init(co, 0n, 0)).toEqual({ producerId: 0n, producerEpoch: 1 });
    // The answer was lost; the client retries with the identity it held: same answer, no bump.
    expect(await init(co, 0n, 0)).toEqual({ producerId: 0n, producerEpoch: 1 });
    expect(await init(co)).toEqual({ producerId: 0n, producerEpoch: 2 });
    await expect(init(co, 0n, 0)).rejects.toMatchObject({ errorName: "PRODUCER_FENCED" });
    const a = await co.initProducerId({
      transactionalId: "",
      transactionTimeoutMs: 0,
      producerId: -1n,
      producerEpoch: -1,
    });
    const b = await co.initProducerId({
      transactionalId: "",
      transactionTimeoutMs: 0,
      producerId: -1n,
      producerEpoch: -1,
    });
    expect(a.producerId).not.toBe(b.producerId);
    await expect(init(co, -1n, -1, 15 * 60_000 + 1)).rejects.toMatchObject({
      errorName: "INVALID_TRANSACTION_TIMEOUT",
    });
    await expect(init(co, -1n, -1, -5)).rejects.toMatchObject({
      errorName: "INVALID_TRANSACTION_TIMEOUT",
    });
  });

  it("AddPartitionsToTxn answers per partition: one missing from this node's metadata is a retriable refusal, the others are added", async () => {
    const c = cluster({ partitionExists: (p) => p.topic !== "not-yet-here" });
    const co = await leaderReady(c);
    const { producerId } = await init(co);
    const answer = await co.addPartitionsToTxn({
      transactionalId: TID,
      producerId,
      producerEpoch: 0,
      partitions: [tp("a", 0), tp("not-yet-here", 0), tp("a", 1)],
      verifyOnly: false,
    });
    expect(answer.map((r) => r.error)).toEqual(["NONE", "UNKNOWN_TOPIC_OR_PARTITION", "NONE"]);
    expect(state(co).record).toMatchObject({
      state: "Ongoing",
      partitions: [tp("a", 0), tp("a", 1)],
    });
    // Only missing partitions: nothing written, every one refused retriably.
    const none = await co.addPartitionsToTxn({
      transactionalId: TID,
      producerId,
      producerEpoch: 0,
      partitions: [tp("not-yet-here", 1)],
      verifyOnly: false,
    });
    expect(none.map((r) => r.error)).toEqual(["UNKNOWN_TOPIC_OR_PARTITION"]);
    expect(state(co).record?.partitions).toHaveLength(2);
  });

  it("commit: markers with the bumped epoch and the coordinator epoch reach every partition, then CompleteCommit", async () => {
    const c = cluster();
    const co = await leaderReady(c);
    const { producerId } = await init(co);
    const base = { transactionalId: TID, producerId, producerEpoch: 0 };
    const added = await co.addPartitionsToTxn({
      ...base,
      partitions: [tp("orders", 0), tp("orders", 1)],
      verifyOnly: false,
    });
    expect(added.map((r) => r.error)).toEqual(["NONE", "NONE"]);
    const offsetsPartition = await co.addOffsetsToTxn({ ...base, groupId: "g1" });
    expect(offsetsPartition).toBe(partitionFor("g1", 50));
    const verified = await co.addPartitionsToTxn({
      ...base,
      partitions: [tp("orders", 1), tp("orders", 5)],
      verifyOnly: true,
    });
    expect(verified.map((r) => r.error)).toEqual(["NONE", "INVALID_TXN_STATE"]);
    expect(await co.endTxn({ ...base, committed: true })).toEqual({ producerId, producerEpoch: 1 });
    await runUntil(c.clock, "CompleteCommit", () => state(co).record?.state === "CompleteCommit");
    for (const [t, p] of [
      ["orders", 0],
      ["orders", 1],
      ["__consumer_offsets", offsetsPartition],
    ] as const) {
      expect(c.brokers.markersFor(t, p)).toEqual([
        expect.objectContaining({
          controlType: "COMMIT",
          producerEpoch: 1,
          coordinatorEpoch: c.log.term(),
          producerId: "0",
          epochBumped: true,
        }),
      ]);
    }
    // Batched per broker: orders/1 and the offsets partition (odd) share broker-1.
    expect(c.brokers.requests).toBeLessThanOrEqual(2);
    expect(state(co).pendingMarkerPartitions).toEqual([]);
    // A retry of the same EndTxn gets the same answer; the opposite decision is refused.
    expect(await co.endTxn({ ...base, committed: true })).toEqual({ producerId, producerEpoch: 1 });
    await expect(co.endTxn({ ...base, committed: false })).rejects.toMatchObject({
      errorName: "INVALID_TXN_STATE",
    });
  });

  it("a V1 end (keepEpoch, Kafka clients): the identity stays, markers carry it, the next transaction reuses it", async () => {
    const c = cluster();
    const co = await leaderReady(c);
    const { producerId } = await init(co);
    const base = { transactionalId: TID, producerId, producerEpoch: 0 };
    await co.addPartitionsToTxn({ ...base, partitions: [tp("orders", 0)], verifyOnly: false });
    expect(await co.endTxn({ ...base, committed: true, keepEpoch: true })).toEqual({
      producerId,
      producerEpoch: 0,
    });
    await runUntil(c.clock, "CompleteCommit", () => state(co).record?.state === "CompleteCommit");
    expect(c.brokers.markersFor("orders", 0)).toEqual([
      expect.objectContaining({
        controlType: "COMMIT",
        producerEpoch: 0,
        producerId: "0",
        epochBumped: false,
      }),
    ]);
    // A retry of that EndTxn is answered from the applied state; the opposite decision is refused.
    expect(await co.endTxn({ ...base, committed: true, keepEpoch: true })).toEqual({
      producerId,
      producerEpoch: 0,
    });
    await expect(co.endTxn({ ...base, committed: false, keepEpoch: true })).rejects.toMatchObject({
      errorName: "INVALID_TXN_STATE",
    });
    // The next transaction with the same identity, aborted.
    await co.addPartitionsToTxn({ ...base, partitions: [tp("orders", 0)], verifyOnly: false });
    expect(await co.endTxn({ ...base, committed: false, keepEpoch: true })).toEqual({
      producerId,
      producerEpoch: 0,
    });
    await runUntil(c.clock, "CompleteAbort", () => state(co).record?.state === "CompleteAbort");
    expect(
      c.brokers.markersFor("orders", 0).map((m) => `${m.controlType}/${m.producerEpoch}`),
    ).toEqual(["COMMIT/0", "ABORT/0"]);
    // A new instance still fences the old one with a bump.
    expect(await init(co)).toEqual({ producerId, producerEpoch: 1 });
    await expect(
      co.addPartitionsToTxn({ ...base, partitions: [tp("orders", 0)], verifyOnly: false }),
    ).rejects.toMatchObject({ errorName: "PRODUCER_FENCED" });
  });

  it("KIP-360: the instance holding an open transaction re-initialises with its identity: its transaction is aborted (bumped) and it gets a newer epoch", async () => {
    const c = cluster();
    const co = await leaderReady(c);
    const p = await init(co);
    await co.addPartitionsToTxn({
      transactionalId: TID,
      ...p,
      partitions: [tp("orders", 0)],
      verifyOnly: false,
    });
    expect(await init(co, p.producerId, p.producerEpoch)).toEqual({
      producerId: p.producerId,
      producerEpoch: 2,
    });
    expect(state(co).record).toMatchObject({ state: "Empty", producerEpoch: 2 });
    // The open transaction's markers carry the bumped epoch: its late batches are fenced.
    expect(c.brokers.markersFor("orders", 0)).toEqual([
      expect.objectContaining({ controlType: "ABORT", producerEpoch: 1 }),
    ]);
    await expect(
      co.addPartitionsToTxn({
        transactionalId: TID,
        ...p,
        partitions: [tp("orders", 0)],
        verifyOnly: false,
      }),
    ).rejects.toMatchObject({ errorName: "PRODUCER_FENCED" });
    // A new instance (no identity presented) still fences the open transaction's holder.
    await co.addPartitionsToTxn({
      transactionalId: TID,
      producerId: p.producerId,
      producerEpoch: 2,
      partitions: [tp("orders", 0)],
      verifyOnly: false,
    });
    expect(await init(co)).toEqual({ producerId: p.producerId, producerEpoch: 4 });
    await expect(init(co, p.producerId, 2)).rejects.toMatchObject({ errorName: "PRODUCER_FENCED" });
  });

  it("a transaction begun right after a commit waits for the completion instead of CONCURRENT_TRANSACTIONS", async () => {
    const c = cluster();
    const { co, producerId } = await withA0Added(c);
    c.brokers.delayMs = 50;
    const next = await co.endTxn({
      transactionalId: TID,
      producerId,
      producerEpoch: 0,
      committed: true,
    });
    expect(state(co).record?.state).toBe("PrepareCommit");
    expect(state(co).pendingMarkerPartitions).toEqual([tp("a", 0)]);
    const r = await drive(
      c.clock,
      co.addPartitionsToTxn({
        transactionalId: TID,
        ...next,
        partitions: [tp("a", 0)],
        verifyOnly: false,
      }),
    );
    expect(r[0]!.error).toBe("NONE");
    expect(c.brokers.markersFor("a", 0)).toHaveLength(1);
    expect(state(co).record).toMatchObject({ state: "Ongoing", producerEpoch: 1 });
  });

  it("the next transaction's adds, waiting for the completion, are written with its Complete* as one record", async () => {
    const c = cluster();
    const { co, producerId, add } = await withA0Added(c);
    c.brokers.delayMs = 50;
    const next = await co.endTxn({
      transactionalId: TID,
      producerId,
      producerEpoch: 0,
      committed: true,
    });
    const entriesAfterPrepare = c.log.length;
    // Three partition leaders add their partitions at once (KIP-890 part 2) while the markers
    // of the previous transaction are out.
    const answers = await drive(
      c.clock,
      Promise.all([
        add(next.producerEpoch, [tp("a", 0)]),
        add(next.producerEpoch, [tp("a", 1)]),
        add(next.producerEpoch, [tp("b", 0)]),
      ]),
    );
    expect(answers.flat().map((r) => r.error)).toEqual(["NONE", "NONE", "NONE"]);
    expect(c.brokers.markersFor("a", 0)).toHaveLength(1);
    expect(c.log.length).toBe(entriesAfterPrepare + 1);
    expect(state(co).record).toMatchObject({
      state: "Ongoing",
      producerEpoch: 1,
      partitions: [tp("a", 0), tp("a", 1), tp("b", 0)],
    });
    // The folded transaction commits as any other.
    c.brokers.delayMs = 0;
    await drive(c.clock, co.endTxn({ transactionalId: TID, ...next, committed: true }));
    await runUntil(c.clock, "complete", () => state(co).record?.state === "CompleteCommit");
    expect(c.brokers.markersFor("b", 0)).toHaveLength(1);
    expect(c.brokers.markersFor("a", 0)).toHaveLength(2);
  });

  it("answers CONCURRENT_TRANSACTIONS only when the completion exceeds the wait bound", async () => {
    const c = cluster({ limits: { completionWaitMs: 30 } });
    const { co, producerId } = await withA0Added(c);
    c.brokers.down = true;
    const next = await co.endTxn({
      transactionalId: TID,
      producerId,
      producerEpoch: 0,
      committed: true,
    });
    await expect(
      drive(
        c.clock,
        co.addPartitionsToTxn({
          transactionalId: TID,
          ...next,
          partitions: [tp("a", 0)],
          verifyOnly: false,
        }),
      ),
    ).rejects.toMatchObject({ errorName: "CONCURRENT_TRANSACTIONS" });
    c.brokers.down = false;
    await runUntil(
      c.clock,
      "CompleteCommit after the broker returns",
      () => state(co).record?.state === "CompleteCommit",
    );
  });

  it("a second instance fences the first on every path and aborts its open transaction", async () => {
    const c = cluster();
    const co = await leaderReady(c);
    const zombie = await init(co);
    const z = { transactionalId: TID, ...zombie };
    await co.addPartitionsToTxn({ ...z, partitions: [tp("a", 0)], verifyOnly: false });
    const fresh = await init(co);
    expect(fresh).toEqual({ producerId: zombie.producerId, producerEpoch: 2 });
    expect(c.brokers.markersFor("a", 0)).toEqual([
      expect.objectContaining({ controlType: "ABORT", producerEpoch: 1 }),
    ]);
    await expect(
      co.addPartitionsToTxn({ ...z, partitions: [tp("b", 0)], verifyOnly: false }),
    ).rejects.toMatchObject({ errorName: "PRODUCER_FENCED" });
    expect(
      (await co.addPartitionsToTxn({ ...z, partitions: [tp("a", 0)], verifyOnly: true }))[0]!.error,
    ).toBe("PRODUCER_FENCED");
    await expect(co.addOffsetsToTxn({ ...z, groupId: "g" })).rejects.toMatchObject({
      errorName: "PRODUCER_FENCED",
    });
    await expect(co.endTxn({ ...z, committed: true })).rejects.toMatchObject({
      errorName: "PRODUCER_FENCED",
    });
    await expect(co.endTxn({ ...z, committed: false })).rejects.toMatchObject({
      errorName: "PRODUCER_FENCED",
    });
    expect(state(co).record).toMatchObject({ state: "Empty", producerEpoch: 2 });
  });

  it("a late EndTxn of an earlier transaction never touches the later one", async () => {
    const c = cluster();
    const co = await leaderReady(c);
    const first = await init(co);
    await co.addPartitionsToTxn({
      transactionalId: TID,
      ...first,
      partitions: [tp("a", 0)],
      verifyOnly: false,
    });
    const second = await co.endTxn({ transactionalId: TID, ...first, committed: true });
    await co.addPartitionsToTxn({
      transactionalId: TID,
      ...second,
      partitions: [tp("b", 1)],
      verifyOnly: false,
    });
    await expect(
      co.endTxn({ transactionalId: TID, ...first, committed: false }),
    ).rejects.toMatchObject({ errorName: "PRODUCER_FENCED" });
    await expect(
      co.endTxn({ transactionalId: TID, ...first, committed: true }),
    ).rejects.toMatchObject({ errorName: "PRODUCER_FENCED" });
    expect(state(co).record).toMatchObject({
      state: "Ongoing",
      producerEpoch: 1,
      partitions: [tp("b", 1)],
    });
    expect(c.brokers.markersFor("b", 1)).toEqual([]);
  });

  it("aborts a transaction open past its timeout; its producer then gets TRANSACTION_TIMED_OUT", async () => {
    const c = cluster();
    const co = await leaderReady(c);
    const p = await init(co, -1n, -1, 1_000);
    const req = { transactionalId: TID, ...p };
    await co.addPartitionsToTxn({ ...req, partitions: [tp("a", 0)], verifyOnly: false });
    c.clock.advance(999);
    await turns();
    expect(state(co).record?.state).toBe("Ongoing");
    c.clock.advance(1);
    await runUntil(c.clock, "timeout abort", () => state(co).record?.state === "CompleteAbort");
    expect(c.brokers.markersFor("a", 0)).toEqual([
      expect.objectContaining({ controlType: "ABORT", producerEpoch: 1 }),
    ]);
    await expect(
      co.addPartitionsToTxn({ ...req, partitions: [tp("b", 0)], verifyOnly: false }),
    ).rejects.toMatchObject({ errorName: "TRANSACTION_TIMED_OUT" });
    await expect(co.endTxn({ ...req, committed: true })).rejects.toMatchObject({
      errorName: "TRANSACTION_TIMED_OUT",
    });
    // The same producer recovers with its identity (KIP-360): a new epoch.
    expect(await init(co, p.producerId, p.producerEpoch, 1_000)).toEqual({
      producerId: p.producerId,
      producerEpoch: 2,
    });
  });

  it("failover: a new leader resumes markers of a decided transaction with its own coordinator epoch", async () => {
    const c = cluster({ replicas: 2 });
    const old = await leaderReady(c, 0);
    const p = await init(old);
    await old.addPartitionsToTxn({
      transactionalId: TID,
      ...p,
      partitions: [tp("a", 0), tp("a", 1)],
      verifyOnly: false,
    });
    c.brokers.down = true;
    await old.endTxn({ transactionalId: TID, ...p, committed: true });
    // SIGKILL: the process, its timers and its marker queues are gone.
    c.log.kill(0);
    await old.close();
    c.nodes[0]!.markers.close();
    c.brokers.down = false;
    const fresh = await leaderReady(c, 1);
    await runUntil(
      c.clock,
      "resumed commit",
      () => state(fresh).record?.state === "CompleteCommit",
    );
    for (const part of [0, 1]) {
      expect(c.brokers.markersFor("a", part)).toEqual([
        expect.objectContaining({ controlType: "COMMIT", coordinatorEpoch: c.log.term() }),
      ]);
    }
    // The retry of EndTxn on the new leader gets the same answer.
    expect(await fresh.endTxn({ transactionalId: TID, ...p, committed: true })).toEqual({
      producerId: p.producerId,
      producerEpoch: 1,
    });
  });

  it("failover: an open transaction survives on the new leader and the old leader stops", async () => {
    const c = cluster({ replicas: 2 });
    const old = await leaderReady(c, 0);
    const p = await init(old);
    await old.addPartitionsToTxn({
      transactionalId: TID,
      ...p,
      partitions: [tp("a", 0)],
      verifyOnly: false,
    });
    const fresh = await leaderReady(c, 1);
    await expect(
      old.addPartitionsToTxn({
        transactionalId: TID,
        ...p,
        partitions: [tp("a", 0)],
        verifyOnly: true,
      }),
    ).rejects.toMatchObject({ errorName: "NOT_COORDINATOR" });
    const v = await fresh.addPartitionsToTxn({
      transactionalId: TID,
      ...p,
      partitions: [tp("a", 0)],
      verifyOnly: true,
    });
    expect(v[0]!.error).toBe("NONE");
    expect(await fresh.endTxn({ transactionalId: TID, ...p, committed: false })).toEqual({
      producerId: p.producerId,
      producerEpoch: 1,
    });
    await runUntil(c.clock, "abort", () => state(fresh).record?.state === "CompleteAbort");
  });

  it("rotates to a new producer id when the epoch is exhausted", async () => {
    const c = cluster();
    const co = await leaderReady(c);
    const p = await init(co);
    // Jump the epoch through the log itself (the only writer of records).
    const group = c.nodes[0]!.group;
    const record = state(co).record!;
    await group.propose(
      encodeEntry({ kind: "txn", record: { ...record, producerEpoch: PRODUCER_EPOCH_MAX - 1 } }),
    );
    const rotated = await init(co, p.producerId, PRODUCER_EPOCH_MAX - 1);
    expect(rotated.producerEpoch).toBe(0);
    expect(rotated.producerId).not.toBe(p.producerId);
    await expect(
      co.addPartitionsToTxn({
        transactionalId: TID,
        producerId: p.producerId,
        producerEpoch: PRODUCER_EPOCH_MAX - 1,
        partitions: [tp("a", 0)],
        verifyOnly: false,
      }),
    ).rejects.toMatchObject({ errorName: "PRODUCER_FENCED" });
  });

  it("admin: list and describe; abort fences the producer", async () => {
    const c = cluster();
    const co = await leaderReady(c);
    const p = await init(co);
    await co.addPartitionsToTxn({
      transactionalId: TID,
      ...p,
      partitions: [tp("a", 0)],
      verifyOnly: false,
    });
    c.clock.advance(5_000);
    expect(
      co
        .listTransactions({ states: ["Ongoing"], producerIds: [], minDurationMs: 4_000 })
        .transactions.map((t) => t.transactionalId),
    ).toEqual([TID]);
    expect(
      co.listTransactions({ states: [], producerIds: [], minDurationMs: 6_000 }).transactions,
    ).toEqual([]);
    expect(
      co.listTransactions({ states: ["Empty"], producerIds: [], minDurationMs: 0 }).transactions,
    ).toEqual([]);
    const d = state(co);
    expect(d).toMatchObject({
      error: "NONE",
      coordinatorEpoch: 1,
      record: { state: "Ongoing", timeoutMs: 60_000, partitions: [tp("a", 0)] },
    });
    expect(co.describeTransactions(["unknown-id-x"])[0]!.error).toMatch(
      /TRANSACTIONAL_ID_NOT_FOUND|NOT_COORDINATOR/,
    );
    expect(await co.abortTransaction(TID)).toBe("PrepareAbort");
    await runUntil(c.clock, "admin abort", () => state(co).record?.state === "CompleteAbort");
    await expect(co.endTxn({ transactionalId: TID, ...p, committed: true })).rejects.toMatchObject({
      errorName: "PRODUCER_FENCED",
    });
  });

  it("wall clock steps neither abort an open transaction early nor keep it open past its timeout: it is measured on the monotonic clock", async () => {
    const clock = new SteppingClock(1_000_000);
    const c = cluster({ clock });
    const co = await leaderReady(c);
    const p = await init(co, -1n, -1, 10_000);
    const req = { transactionalId: TID, ...p };
    await co.addPartitionsToTxn({ ...req, partitions: [tp("a", 0)], verifyOnly: false });
    const startedMs = clock.monotonicMs();
    // The host's wall clock steps two minutes forward, far past the 10 s timeout.
    clock.stepMs = 120_000;
    c.clock.advance(3_000);
    await turns();
    expect(state(co).record?.state).toBe("Ongoing");
    // ... and five minutes back: the transaction must still time out 10 s after it began.
    clock.stepMs = -300_000;
    c.clock.advance(10_000 - 1 - (clock.monotonicMs() - startedMs));
    await turns();
    expect(state(co).record?.state).toBe("Ongoing");
    await runUntil(c.clock, "timeout abort", () => state(co).record?.state === "CompleteAbort");
    expect(clock.monotonicMs() - startedMs).toBeLessThanOrEqual(10_000 + 2 * 10);
  });

  it("a transaction begun while the wall clock runs ahead commits after the clock steps back", async () => {
    const clock = new SteppingClock(1_000_000);
    const c = cluster({ clock });
    const co = await leaderReady(c);
    const p = await init(co, -1n, -1, 10_000);
    const req = { transactionalId: TID, ...p };
    clock.stepMs = 90_000;
    await co.addPartitionsToTxn({ ...req, partitions: [tp("a", 0)], verifyOnly: false });
    clock.stepMs = 0; // the clock is corrected: the transaction's start now lies 90 s in the future
    c.clock.advance(2_000);
    await turns();
    await drive(c.clock, co.endTxn({ ...req, committed: true }));
    await runUntil(c.clock, "CompleteCommit", () => state(co).record?.state === "CompleteCommit");
  });

  it("expires idle ids after the configured time", async () => {
    const c = cluster({ limits: { transactionalIdExpirationMs: 10_000 } });
    const co = await leaderReady(c);
    await init(co);
    c.clock.advance(10_000);
    await runUntil(c.clock, "expiration", () => state(co).error === "TRANSACTIONAL_ID_NOT_FOUND");
  });

  it("bounds the transactional ids of a partition: a new id past the bound is refused, known ids keep working", async () => {
    const c = cluster({ limits: { transactionalIdsPerPartitionMax: 1 } });
    const co = await leaderReady(c);
    const first = await init(co);
    const other = co.initProducerId({
      transactionalId: TID2,
      transactionTimeoutMs: 0,
      producerId: -1n,
      producerEpoch: -1,
    });
    await expect(other).rejects.toMatchObject({
      errorName: "THROTTLING_QUOTA_EXCEEDED",
      message: expect.stringMatching(/already keeps 1 transactional ids, the most it holds/),
    });
    expect(co.describeTransactions([TID2])[0]!.error).toBe("TRANSACTIONAL_ID_NOT_FOUND");
    expect(await init(co)).toEqual({ producerId: first.producerId, producerEpoch: 1 });
  });

  it("an older instance re-initialising with the identity it holds is fenced, never handed the newer instance's identity", async () => {
    const c = cluster();
    const co = await leaderReady(c);
    const a = await init(co);
    const b = await init(co);
    expect(b).toEqual({ producerId: a.producerId, producerEpoch: 1 });
    await expect(init(co, a.producerId, a.producerEpoch)).rejects.toMatchObject({
      errorName: "PRODUCER_FENCED",
    });
    expect(state(co).record).toMatchObject({ producerEpoch: 1 });
    // b opens a transaction; a new instance fences it. b's re-init, queued behind the fence,
    // finds the aborted transaction with b's identity as the last one: still fenced.
    await co.addPartitionsToTxn({
      transactionalId: TID,
      ...b,
      partitions: [tp("a", 0)],
      verifyOnly: false,
    });
    c.brokers.delayMs = 30;
    const fresh = init(co);
    const zombie = init(co, b.producerId, b.producerEpoch);
    await expect(drive(c.clock, zombie)).rejects.toMatchObject({ errorName: "PRODUCER_FENCED" });
    expect(await drive(c.clock, fresh)).toEqual({ producerId: a.producerId, producerEpoch: 3 });
  });

  it("a decision whose proposal outlives the request keeps the id locked, then completes: markers written, the retry answered, the id usable", async () => {
    const c = cluster({ limits: { proposeTimeoutMs: 40 } });
    const co = await leaderReady(c);
    const p = await init(co);
    const base = { transactionalId: TID, ...p };
    await co.addPartitionsToTxn({
      ...base,
      partitions: [tp("a", 0), tp("a", 1)],
      verifyOnly: false,
    });
    c.log.pauseCommits();
    await expect(drive(c.clock, co.endTxn({ ...base, committed: true }))).rejects.toMatchObject({
      errorName: "REQUEST_TIMED_OUT",
    });
    // While the outcome is unknown the id stays locked: the client's retry waits, it does not decide twice.
    const retry = co.endTxn({ ...base, committed: true });
    c.log.resumeCommits();
    expect(await drive(c.clock, retry)).toEqual({ producerId: p.producerId, producerEpoch: 1 });
    await runUntil(
      c.clock,
      "CompleteCommit after the late decision applied",
      () => state(co).record?.state === "CompleteCommit",
    );
    for (const part of [0, 1])
      expect(c.brokers.markersFor("a", part)).toEqual([
        expect.objectContaining({ controlType: "COMMIT", producerEpoch: 1 }),
      ]);
    expect(await init(co, p.producerId, 1)).toEqual({ producerId: p.producerId, producerEpoch: 2 });
  });

  it("a leader that steps down with a proposal pending answers NOT_COORDINATOR at once, not after proposeTimeoutMs, and keeps the id locked", async () => {
    const c = cluster({ limits: { proposeTimeoutMs: 60_000 } });
    const co = await leaderReady(c);
    const p = await init(co);
    const base = { transactionalId: TID, ...p };
    await co.addPartitionsToTxn({ ...base, partitions: [tp("a", 0)], verifyOnly: false });
    c.log.pauseCommits();
    const end = co.endTxn({ ...base, committed: true });
    const t0 = c.clock.monotonicMs();
    c.log.stepDown(0);
    await expect(end).rejects.toMatchObject({ errorName: "NOT_COORDINATOR" });
    expect(c.clock.monotonicMs() - t0).toBeLessThan(3_000);
    // No leader now: the next request waits out the leadership bound, then gets the same answer.
    await expect(drive(c.clock, co.endTxn({ ...base, committed: true }))).rejects.toMatchObject({
      errorName: "NOT_COORDINATOR",
    });
  });

  it("a decision whose markers stopped while this leader goes on (queue full, fenced answer) is completed by the scan", async () => {
    const c = cluster({ markerQueueMax: 2 });
    const co = await leaderReady(c);
    const other = await co.initProducerId({
      transactionalId: TID2,
      transactionTimeoutMs: 0,
      producerId: -1n,
      producerEpoch: -1,
    });
    await co.addPartitionsToTxn({
      transactionalId: TID2,
      ...other,
      partitions: [tp("b", 0), tp("b", 1)],
      verifyOnly: false,
    });
    const p = await init(co);
    await co.addPartitionsToTxn({
      transactionalId: TID,
      ...p,
      partitions: [tp("a", 0)],
      verifyOnly: false,
    });
    c.brokers.down = true;
    await co.endTxn({ transactionalId: TID2, ...other, committed: true });
    // The queue holds TID2's two partitions: TID's markers are refused ("cancelled").
    await co.endTxn({ transactionalId: TID, ...p, committed: true });
    c.brokers.refusals.push({ topic: "a", code: "PRODUCER_FENCED" });
    c.brokers.down = false;
    await runUntil(
      c.clock,
      "the other transaction completes",
      () => state(co, TID2).record?.state === "CompleteCommit",
    );
    await runUntil(
      c.clock,
      "the stopped decision completes",
      () => state(co).record?.state === "CompleteCommit",
    );
    expect(c.brokers.markersFor("a", 0)).toEqual([
      expect.objectContaining({ controlType: "COMMIT" }),
    ]);
    expect(c.brokers.refusals).toEqual([]);
  });
});

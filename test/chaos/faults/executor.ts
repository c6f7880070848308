// Runs a fault schedule against the live cluster while the workload runs: each step at its
// time, resolved against the metadata of that moment, measuring recovery (kill -> new leader,
// heal -> LSO advancing). heal() undoes whatever is still in effect: resumes paused processes,
// removes partitions, restarts dead processes. Every wait is bounded.
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  OFFSETS_PARTITIONS_DEFAULT,
  partitionFor,
  TXN_LOG_PARTITIONS_DEFAULT,
} from "../../../libs/common/hash.js";
import {
  CONSUMER_OFFSETS_TOPIC,
  TRANSACTION_STATE_TOPIC,
  type ClusterMetadata,
  type PartitionInfo,
} from "../../../libs/metadata/types.js";
import type { TxnOp } from "../../../libs/verify/history.js";
import {
  FAILPOINTS,
  failpointRole,
  nodeName,
  SPARE_BROKER,
  type ChaosCluster,
  type NodeRef,
} from "../cluster/chaos-cluster.js";
import { pollUntil, sleep, type ClusterClients } from "../workloads/cluster-clients.js";
import type { RunClock } from "../workloads/txn-loop.js";
import { beforeEndTxn } from "../workloads/txn-session.js";
import {
  WORKLOAD_TOPIC,
  type FaultAction,
  type FaultEvent,
  type FaultStep,
  type Target,
} from "./fault-types.js";
import type { LateRequests } from "./late-requests.js";
import type { Endpoint, NetworkPartitioner } from "./network-partition.js";
import { shapeCut } from "./partition-shapes.js";
import {
  CLOCK_APPLY_WAIT_MS,
  formatOffset,
  setClockOffset,
  SkewProbe,
  waitClockApplied,
} from "./clock-skew.js";
import { runStaleView } from "./stale-view.js";
import {
  belowReserve,
  BROKER_DISK_RESERVE_BYTES,
  fillDisk,
  freeBytes,
  removeFiller,
} from "./disk-full.js";
import { tearBrokerDisk, tornSummary } from "./torn-disk.js";
import { loseUnsyncedWrites, lostSummary } from "./lost-writes.js";
import {
  corruptSealedSegment,
  sealedSegments,
  segmentsDamaged,
  segmentsRepaired,
} from "./corrupt-segment.js";
import { runZombie, type ZombieContext } from "./zombie.js";
import type { MemberControl } from "../workloads/group-copier.js";

const LEADER_WAIT_MS = 60_000;
const FAILPOINT_FIRE_WAIT_MS = 30_000;
/** How long a corrupt-segment fault waits for its replica to seal a segment (16 KiB of workload). */
const SEALED_SEGMENT_WAIT_MS = 30_000;
/** A hold failpoint fires at its 40th hit (chaos-cluster.ts): copiers that start late need longer. */
const HOLD_FIRE_WAIT_MS = 60_000;
const HEALTH_WAIT_MS = 90_000;
const LSO_WAIT_MS = 60_000;
/** Bound on a membership change's steps: a spare registering, a dead broker's replicas re-placed (lease + replace delay + ticks). */
const MEMBERSHIP_WAIT_MS = 60_000;
/** A joined replica counts as caught up within this many entries of its leader's commit index. */
const MEMBERSHIP_LAG_MAX = 64;
const POLL_MS = 100;
/** The disk guard reads free space once a second: a few checks' time to see a filled or freed disk. */
const DISK_GUARD_WAIT_MS = 10_000;
/** A restarted broker scrubs its sealed segments in the background: a few seconds for the small ones of a run. */
const DAMAGE_WAIT_MS = 20_000;
/** From the damage report to the repair (a few attempts of segment-repair.ts's backoff). */
const REPAIR_WAIT_MS = 30_000;
/** How long a quorum pause waits for an EndTxn on its partition to strike with (then it strikes anyway). */
const END_TXN_WAIT_MS = 10_000;
/** How long a member pause waits for the member to begin a transaction (then it strikes anyway). */
const PAUSE_MEMBER_TXN_WAIT_MS = 10_000;

export interface ExecutorContext extends ZombieContext {
  readonly cluster: ChaosCluster;
  readonly clients: ClusterClients;
  readonly partitioner: NetworkPartitioner;
  readonly late: LateRequests;
  readonly clock: RunClock;
  /** Workload partitions whose LSO must advance again after a heal. */
  readonly keys: ReadonlyArray<{ topic: string; partition: number }>;
  readonly transactionalIdOf: (process: number) => string;
  readonly processCount: number;
  /** Consumer groups of the workload (their __consumer_offsets leaders count as led groups). */
  readonly groupIds: readonly string[];
  readonly recordTxn: (txn: Omit<TxnOp, "id">) => void;
  readonly stopped: () => boolean;
  /** The consumer group's member processes, when the workload runs some (group copier). */
  readonly members?: MemberControl;
}

export class FaultExecutor {
  readonly events: FaultEvent[] = [];
  /** Ids and partitions that faults wrote to on their own: settle fences and reads them too. */
  readonly extraTransactionalIds: string[] = [];
  readonly extraKeys: Array<{ topic: string; partition: number }> = [];
  private readonly paused = new Set<string>();
  private readonly pausedRefs: NodeRef[] = [];
  /** Nodes whose wall clock is skewed right now (heal steps them back to true time). */
  private readonly skewed = new Map<string, NodeRef>();
  /** Data directories holding a disk-full filler right now (heal removes them). */
  private readonly filled = new Set<string>();

  constructor(private readonly ctx: ExecutorContext) {}

  async run(schedule: readonly FaultStep[]): Promise<void> {
    for (let i = 0; i < schedule.length; i++) {
      const step = schedule[i]!;
      while (this.ctx.clock.nowMs() < step.atMs && !this.ctx.stopped())
        await sleep(Math.min(POLL_MS * 2, step.atMs - this.ctx.clock.nowMs()));
      if (this.ctx.stopped()) return;
      const event: FaultEvent = {
        step: i,
        action: step.action.kind,
        startedMs: Math.round(this.ctx.clock.nowMs()),
        nodes: [],
        aimsAtProcess: step.aimsAtProcess,
      };
      this.events.push(event);
      try {
        await this.runStep(step.action, event);
      } catch (e) {
        event.error = (e as Error).message;
        if (step.action.kind === "partition") throw e; // partitions that cannot be made must fail the run loudly
      }
      event.endedMs = Math.round(this.ctx.clock.nowMs());
    }
  }

  private async runStep(a: FaultAction, event: FaultEvent): Promise<void> {
    switch (a.kind) {
      case "signal":
        return this.signal(a, event);
      case "torn-disk":
        return this.tornDisk(a, event);
      case "disk-full":
        return this.diskFull(a, event);
      case "lost-writes":
        return this.lostWrites(a, event);
      case "corrupt-segment":
        return this.corruptSegment(a, event);
      case "pause":
        return this.pause(a, event);
      case "pause-replicas":
        return this.pauseReplicas(a, event);
      case "stale-view":
        return this.staleView(a, event);
      case "failpoint":
        return this.failpoint(a, event);
      case "failpoint-hold":
        return this.failpointHold(a, event);
      case "partition":
        return this.partition(a, event);
      case "late-requests": {
        this.ctx.late.setActive(true);
        await this.sleepUnlessStopped(a.forMs);
        this.ctx.late.setActive(false);
        return;
      }
      case "clock-skew":
        return this.clockSkew(a, event);
      case "membership-change":
        return this.membershipChange(a, event);
      case "kill-member":
        return this.killMember(a, event);
      case "pause-member":
        return this.pauseMember(a, event);
      case "zombie": {
        const z = await runZombie(this.ctx, event.step, a.holdMs, a.idle === true);
        event.nodes = [z.transactionalId];
        event.note = z.note;
        if (z.violations.length > 0) event.violations = z.violations;
        return;
      }
    }
  }

  private async sleepUnlessStopped(ms: number): Promise<void> {
    const until = Date.now() + ms;
    while (Date.now() < until && !this.ctx.stopped())
      await sleep(Math.min(POLL_MS * 2, until - Date.now()));
  }

  async resolve(target: Target): Promise<NodeRef | undefined> {
    if (target.kind === "node") return { role: target.role, id: target.id };
    const topic = target.topic === WORKLOAD_TOPIC ? this.ctx.keys[0]!.topic : target.topic;
    const leader = await pollUntil(LEADER_WAIT_MS, POLL_MS, async () => {
      const m = await this.ctx.clients.metadata(true);
      const p = m.topics
        .find((t) => t.name === topic)
        ?.partitions.find((x) => x.partition === target.partition);
      return p && p.leader >= 0 && this.ctx.cluster.alive({ role: target.role, id: p.leader })
        ? p.leader
        : undefined;
    });
    return leader === undefined ? undefined : { role: target.role, id: leader };
  }

  private async groupsLedBy(node: NodeRef): Promise<string[]> {
    if (node.role === "controller") return ["__controller"];
    const m = await this.ctx.clients.metadata(true);
    const interesting = new Set([
      ...this.ctx.keys.map((k) => `${k.topic}/${k.partition}`),
      ...this.txnGroups(),
      ...this.offsetsGroups(),
    ]);
    return ledBy(m, node).filter((g) => interesting.has(g));
  }

  private txnGroups(): string[] {
    const out: string[] = [];
    for (let p = 0; p < this.ctx.processCount; p++)
      out.push(
        `${TRANSACTION_STATE_TOPIC}/${partitionFor(this.ctx.transactionalIdOf(p), TXN_LOG_PARTITIONS_DEFAULT)}`,
      );
    return out;
  }

  /** The __consumer_offsets groups of the run's consumer groups (the copier's, when there is one). */
  private offsetsGroups(): string[] {
    return this.ctx.groupIds.map(
      (g) => `${CONSUMER_OFFSETS_TOPIC}/${partitionFor(g, OFFSETS_PARTITIONS_DEFAULT)}`,
    );
  }

  /** Seconds until every group in groups has an alive leader other than node. */
  private async newLeaderS(
    node: NodeRef,
    groups: readonly string[],
    fromMs: number,
  ): Promise<number | undefined> {
    if (groups.length === 0) return undefined;
    const done = await pollUntil(LEADER_WAIT_MS, POLL_MS, async () => {
      const m = await this.ctx.clients.metadata(true);
      for (const g of groups) {
        const [topic, partition] = splitGroup(g);
        const p = m.topics
          .find((t) => t.name === topic)
          ?.partitions.find((x) => x.partition === partition);
        if (
          !p ||
          p.leader < 0 ||
          p.leader === node.id ||
          !this.ctx.cluster.alive({ role: node.role, id: p.leader })
        )
          return undefined;
      }
      return true;
    });
    return done ? (this.ctx.clock.nowMs() - fromMs) / 1000 : undefined;
  }

  private async signal(
    a: Extract<FaultAction, { kind: "signal" }>,
    event: FaultEvent,
  ): Promise<void> {
    const node = await this.resolve(a.target);
    if (!node) throw new Error("no live target");
    event.nodes = [nodeName(node)];
    event.groups = await this.groupsLedBy(node);
    const killMs = this.ctx.clock.nowMs();
    event.killMs = Math.round(killMs);
    this.ctx.cluster.processes.kill(node.role, node.id, a.signal);
    const [leaderS] = await Promise.all([
      this.newLeaderS(node, event.groups, killMs),
      this.ctx.cluster.processes.waitForExit(node.role, node.id, 20_000),
    ]);
    event.killToLeaderS = leaderS;
    await sleep(a.restartAfterMs);
    await this.restart(node);
    event.healToLsoS = await this.lsoAdvancingS();
  }

  /** SIGKILL a broker, tear its data directory as a crash can, start it again: it must recover and catch up. */
  private async tornDisk(
    a: Extract<FaultAction, { kind: "torn-disk" }>,
    event: FaultEvent,
  ): Promise<void> {
    const node = await this.resolve(a.target);
    if (!node) throw new Error("no live target");
    if (node.role !== "broker")
      throw new Error(`torn-disk tears a broker's disk, not a ${node.role}'s`);
    event.nodes = [nodeName(node)];
    event.groups = await this.groupsLedBy(node);
    const killMs = this.ctx.clock.nowMs();
    event.killMs = Math.round(killMs);
    this.ctx.cluster.processes.kill(node.role, node.id, "SIGKILL");
    const [leaderS, exited] = await Promise.all([
      this.newLeaderS(node, event.groups, killMs),
      this.ctx.cluster.processes.waitForExit(node.role, node.id, 20_000),
    ]);
    event.killToLeaderS = leaderS;
    if (!exited)
      throw new Error(`${nodeName(node)} did not exit after SIGKILL: its disk is not torn`);
    const torn = tearBrokerDisk(
      this.ctx.cluster.processes.spec(node.role, node.id).dataDir,
      a.tear,
    );
    event.note = `tore ${torn.length} files: ${tornSummary(torn)}`;
    await sleep(a.restartAfterMs);
    await this.restart(node);
    event.healToLsoS = await this.lsoAdvancingS();
  }

  /**
   * Damage a sealed segment of one follower of a workload partition while it is down: after its
   * restart it must report the damage (tern_segment_damaged_total), never serve it (the
   * checker's final read goes through the leaders), and repair it (tern_segment_repaired_total
   * reaching the damage count within REPAIR_WAIT_MS).
   */
  private async corruptSegment(
    a: Extract<FaultAction, { kind: "corrupt-segment" }>,
    event: FaultEvent,
  ): Promise<void> {
    const leader = await this.resolve(a.target);
    if (!leader) throw new Error("no live target");
    const topic = a.target.topic === WORKLOAD_TOPIC ? this.ctx.keys[0]!.topic : a.target.topic;
    const m = await this.ctx.clients.metadata(true);
    const followers = (
      m.topics
        .find((t) => t.name === topic)
        ?.partitions.find((x) => x.partition === a.target.partition)?.replicas ?? []
    )
      .filter((id) => id !== leader.id)
      .map((id): NodeRef => ({ role: "broker", id }))
      .filter((n) => this.ctx.cluster.alive(n));
    if (followers.length === 0) throw new Error("no live follower to damage");
    const node = followers[a.pick % followers.length]!;
    event.nodes = [nodeName(node)];
    const spec = this.ctx.cluster.spec(node);
    const dir = join(spec.dataDir, "partitions", `${topic}-${a.target.partition}`);
    // A replica seals its first segment once the workload filled 16 KiB of it: wait (bounded).
    await pollUntil(SEALED_SEGMENT_WAIT_MS, 200, async () =>
      sealedSegments(dir).length > 0 ? true : undefined,
    );
    const before = (await segmentsDamaged(spec.metricsAddress)) ?? 0;
    event.killMs = Math.round(this.ctx.clock.nowMs());
    this.ctx.cluster.processes.kill(node.role, node.id, "SIGKILL");
    if (!(await this.ctx.cluster.processes.waitForExit(node.role, node.id, 20_000)))
      throw new Error(`${nodeName(node)} did not exit after SIGKILL`);
    const done = corruptSealedSegment(dir, a.corrupt);
    await sleep(a.restartAfterMs);
    await this.restart(node);
    if (done === undefined) {
      event.note = `did not fire: ${nodeName(node)} held no sealed segment of ${topic}/${a.target.partition}`;
    } else {
      // Counters restart with the process: any damage it reports now is the one just made.
      const found = await pollUntil(DAMAGE_WAIT_MS, 200, async () => {
        const n = await segmentsDamaged(spec.metricsAddress);
        return n !== undefined && n > 0 ? n : undefined;
      });
      // Then it repairs it: from another replica's records, or (cut at open) from its Raft log.
      const repaired = !found
        ? undefined
        : await pollUntil(REPAIR_WAIT_MS, 200, async () => {
            const n = await segmentsRepaired(spec.metricsAddress);
            return n !== undefined && n >= found ? n : undefined;
          });
      event.note = `${done}; ${found ? `${nodeName(node)} reported it (tern_segment_damaged_total ${found})` : `not reported by ${nodeName(node)} within ${DAMAGE_WAIT_MS} ms`} (before the kill: ${before}); ${repaired ? `repaired (tern_segment_repaired_total ${repaired})` : `not repaired within ${REPAIR_WAIT_MS} ms`}`;
      if (!found) event.error = `${nodeName(node)} did not report its damaged segment`;
      else if (!repaired) event.error = `${nodeName(node)} did not repair its damaged segment`;
    }
    event.healToLsoS = await this.lsoAdvancingS();
  }

  /**
   * SIGKILL the target and others of its role at once, drop what they wrote after their last
   * fsync (a machine crash, lost-writes.ts), start them again: nothing committed may be lost.
   */
  private async lostWrites(
    a: Extract<FaultAction, { kind: "lost-writes" }>,
    event: FaultEvent,
  ): Promise<void> {
    const first = await this.resolve(a.target);
    if (!first) throw new Error("no live target");
    const peers = this.ctx.cluster.specs
      .filter((s) => s.role === first.role && s.id !== first.id)
      .map((s): NodeRef => ({ role: s.role, id: s.id }))
      .filter((n) => this.ctx.cluster.alive(n));
    const nodes = [first];
    for (let i = 0; i < a.others && peers.length > 0; i++)
      nodes.push(peers.splice((a.pick + i) % peers.length, 1)[0]!);
    event.nodes = nodes.map(nodeName);
    event.groups = (await Promise.all(nodes.map((n) => this.groupsLedBy(n)))).flat();
    const killMs = this.ctx.clock.nowMs();
    event.killMs = Math.round(killMs);
    for (const n of nodes) this.ctx.cluster.processes.kill(n.role, n.id, "SIGKILL");
    // A minority's groups elect new leaders while it is down; a majority's cannot until it is back.
    const leaderS =
      nodes.length === 1
        ? this.newLeaderS(first, event.groups, killMs)
        : Promise.resolve(undefined);
    const [leader, exited] = await Promise.all([
      leaderS,
      Promise.all(nodes.map((n) => this.ctx.cluster.processes.waitForExit(n.role, n.id, 20_000))),
    ]);
    event.killToLeaderS = leader;
    const notDead = nodes.filter((_, i) => !exited[i]);
    if (notDead.length > 0)
      throw new Error(`${notDead.map(nodeName).join(",")} did not exit after SIGKILL`);
    const notes: string[] = [];
    for (const n of nodes) {
      const lost = loseUnsyncedWrites(this.ctx.cluster.spec(n).dataDir);
      notes.push(
        `${nodeName(n)}: ${lost.manifest ? lostSummary(lost) : "no sync manifest (TERN_SYNC_MANIFEST unset?)"}`,
      );
    }
    event.note = `lost unsynced writes: ${notes.join("; ")}`;
    await sleep(a.restartAfterMs);
    for (const n of nodes) if (!this.ctx.cluster.alive(n)) this.ctx.cluster.start(n);
    await this.ctx.cluster.processes.waitForHealth({ timeoutMs: HEALTH_WAIT_MS, only: nodes });
    event.healToLsoS = await this.lsoAdvancingS();
  }

  /** Fill a running broker's disk below its reserve: it must refuse produce, lose nothing, and take writes again once the space is back. */
  private async diskFull(
    a: Extract<FaultAction, { kind: "disk-full" }>,
    event: FaultEvent,
  ): Promise<void> {
    const node = await this.resolve(a.target);
    if (!node) throw new Error("no live target");
    if (node.role !== "broker")
      throw new Error(`disk-full fills a broker's disk, not a ${node.role}'s`);
    event.nodes = [nodeName(node)];
    event.groups = await this.groupsLedBy(node);
    const spec = this.ctx.cluster.spec(node);
    if (!this.ctx.cluster.disks.has(spec.dataDir)) {
      event.note = `skipped: ${this.ctx.cluster.disks.refusal ?? "the broker has no disk of its own"}`;
      return;
    }
    const filler = fillDisk(spec.dataDir, BROKER_DISK_RESERVE_BYTES / 2);
    this.filled.add(spec.dataDir);
    event.killMs = Math.round(this.ctx.clock.nowMs());
    const mib = (n: number): number => Math.round(n / 2 ** 20);
    const refused = await pollUntil(DISK_GUARD_WAIT_MS, POLL_MS, async () =>
      (await belowReserve(spec.metricsAddress)) === true ? true : undefined,
    );
    event.note = refused
      ? `a ${mib(filler.bytes)} MiB filler left ${mib(freeBytes(spec.dataDir))} MiB free (reserve ${mib(BROKER_DISK_RESERVE_BYTES)} MiB): ${nodeName(node)} refused produce`
      : `did not fire: ${nodeName(node)} never reported free space below its reserve after a ${mib(filler.bytes)} MiB filler`;
    await this.sleepUnlessStopped(a.holdMs);
    removeFiller(spec.dataDir);
    this.filled.delete(spec.dataDir);
    const back = await pollUntil(DISK_GUARD_WAIT_MS, POLL_MS, async () =>
      (await belowReserve(spec.metricsAddress)) === false ? true : undefined,
    );
    if (!back)
      event.error = `${nodeName(node)} still refused produce ${DISK_GUARD_WAIT_MS} ms after its disk was freed`;
    event.healToLsoS = await this.lsoAdvancingS();
  }

  /** SIGKILL a group member process; the others must take its partitions once its session times out. */
  private async killMember(
    a: Extract<FaultAction, { kind: "kill-member" }>,
    event: FaultEvent,
  ): Promise<void> {
    const members = this.ctx.members;
    if (!members) throw new Error("the workload has no consumer group members to kill");
    const member = a.member % members.count;
    event.nodes = [`group-member-${member}`];
    event.killMs = Math.round(this.ctx.clock.nowMs());
    const { owned } = await members.kill(member, "SIGKILL");
    const inTopic = this.ctx.keys[0]!.topic;
    event.aimsAtKeys = owned.map((p) => `${inTopic}/${p}`);
    event.note = `it owned input partitions [${owned.join(",")}]`;
    await this.sleepUnlessStopped(a.restartAfterMs);
    members.restart(member);
    event.healToLsoS = await this.lsoAdvancingS();
  }

  /** SIGSTOP a group member past its session timeout (the coordinator fences it), then SIGCONT: its transaction in flight must not commit. */
  private async pauseMember(
    a: Extract<FaultAction, { kind: "pause-member" }>,
    event: FaultEvent,
  ): Promise<void> {
    const members = this.ctx.members;
    if (!members) throw new Error("the workload has no consumer group members to pause");
    const member = a.member % members.count;
    event.nodes = [`group-member-${member}`];
    const { owned, inTransaction } = await members.pauseInTransaction(
      member,
      PAUSE_MEMBER_TXN_WAIT_MS,
    );
    event.killMs = Math.round(this.ctx.clock.nowMs());
    const inTopic = this.ctx.keys[0]!.topic;
    event.aimsAtKeys = owned.map((p) => `${inTopic}/${p}`);
    event.note = `it owned input partitions [${owned.join(",")}]; paused ${a.resumeAfterMs} ms ${inTransaction ? "inside a transaction" : "(no transaction began within the wait)"}`;
    try {
      await this.sleepUnlessStopped(a.resumeAfterMs);
    } finally {
      members.resume(member);
    }
    event.healToLsoS = await this.lsoAdvancingS();
  }

  private async pause(
    a: Extract<FaultAction, { kind: "pause" }>,
    event: FaultEvent,
  ): Promise<void> {
    const node = await this.resolve(a.target);
    if (!node) throw new Error("no live target");
    event.nodes = [nodeName(node)];
    event.groups = await this.groupsLedBy(node);
    const stopMs = this.ctx.clock.nowMs();
    event.killMs = Math.round(stopMs);
    this.ctx.cluster.processes.kill(node.role, node.id, "SIGSTOP");
    this.paused.add(nodeName(node));
    this.pausedRefs.push(node);
    const [leaderS] = await Promise.all([
      this.newLeaderS(node, event.groups, stopMs).then((s) => s),
      sleep(a.resumeAfterMs),
    ]);
    event.killToLeaderS = leaderS;
    this.ctx.cluster.processes.kill(node.role, node.id, "SIGCONT");
    this.paused.delete(nodeName(node));
    event.healToLsoS = await this.lsoAdvancingS();
  }

  private async pauseReplicas(
    a: Extract<FaultAction, { kind: "pause-replicas" }>,
    event: FaultEvent,
  ): Promise<void> {
    const leader = await this.resolve(a.target);
    if (!leader) throw new Error("no live target");
    const m = await this.ctx.clients.metadata(true);
    const topic = a.target.topic === WORKLOAD_TOPIC ? this.ctx.keys[0]!.topic : a.target.topic;
    const replicas =
      m.topics
        .find((t) => t.name === topic)
        ?.partitions.find((x) => x.partition === a.target.partition)?.replicas ?? [];
    const followers = replicas
      .filter((id) => id !== leader.id)
      .map((id): NodeRef => ({ role: leader.role, id }))
      .filter((n) => this.ctx.cluster.alive(n));
    event.nodes = [leader, ...followers].map(nodeName);
    event.groups = await this.groupsLedBy(leader);
    const stop = (n: NodeRef): void => {
      this.ctx.cluster.processes.kill(n.role, n.id, "SIGSTOP");
      this.paused.add(nodeName(n));
      this.pausedRefs.push(n);
    };
    // Strike as an EndTxn of an id on this partition leaves: the followers stop first, so its
    // PrepareX is appended on the leader and cannot commit.
    const partitions =
      m.topics.find((t) => t.name === topic)?.partitions.length ?? TXN_LOG_PARTITIONS_DEFAULT;
    const struck = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => done(false), END_TXN_WAIT_MS);
      const hook = (transactionalId: string): void => {
        if (
          topic === TRANSACTION_STATE_TOPIC &&
          partitionFor(transactionalId, partitions) !== a.target.partition
        )
          return;
        for (const f of followers) stop(f);
        done(true);
      };
      const done = (onEndTxn: boolean): void => {
        clearTimeout(timer);
        beforeEndTxn.delete(hook);
        if (!onEndTxn) for (const f of followers) stop(f);
        resolve(onEndTxn);
      };
      beforeEndTxn.add(hook);
    });
    await sleep(a.leaderAfterMs);
    stop(leader);
    event.killMs = Math.round(this.ctx.clock.nowMs());
    event.note = `${followers.length} followers paused ${a.leaderAfterMs} ms before the leader${struck ? ", as an EndTxn left" : " (no EndTxn within the wait)"}`;
    await this.sleepUnlessStopped(a.resumeAfterMs);
    for (const n of [leader, ...followers]) {
      this.ctx.cluster.processes.kill(n.role, n.id, "SIGCONT");
      this.paused.delete(nodeName(n));
    }
    event.healToLsoS = await this.lsoAdvancingS();
  }

  private async staleView(
    a: Extract<FaultAction, { kind: "stale-view" }>,
    event: FaultEvent,
  ): Promise<void> {
    // The run's workload topic is unique per run: ids and topics named after it never meet an earlier run's.
    const prefix = this.ctx.keys[0]!.topic;
    this.ctx.partitioner.ensureAvailable();
    try {
      const r = await runStaleView(
        { ...this.ctx, prefix },
        event.step,
        a.target.partition,
        a.holdMs,
      );
      this.extraTransactionalIds.push(r.transactionalId);
      if (r.key) this.extraKeys.push(r.key);
      event.nodes = r.nodes;
      event.killMs = r.killMs === undefined ? undefined : Math.round(r.killMs);
      event.note = r.note;
    } finally {
      await this.ctx.partitioner.heal();
      for (const n of this.ctx.cluster.dead()) await this.restart(n);
    }
    event.healToLsoS = await this.lsoAdvancingS();
  }

  private async failpoint(
    a: Extract<FaultAction, { kind: "failpoint" }>,
    event: FaultEvent,
  ): Promise<void> {
    const file = join(this.ctx.cluster.onceDir, a.name);
    const before = await this.ctx.clients.metadata(true);
    rmSync(file, { force: true });
    const fired = await pollUntil(FAILPOINT_FIRE_WAIT_MS, 50, async () =>
      existsSync(file) ? true : undefined,
    );
    if (!fired) {
      writeFileSync(file, "disarmed"); // nothing reached it in time: disarm again
      event.note = `failpoint ${a.name} did not fire within ${FAILPOINT_FIRE_WAIT_MS} ms`;
      return;
    }
    const killMs = this.ctx.clock.nowMs();
    event.killMs = Math.round(killMs);
    const role = failpointRole(a.name);
    const dead = await pollUntil(20_000, 50, async () =>
      this.ctx.cluster.dead().find((n) => n.role === role),
    );
    if (!dead) throw new Error(`failpoint ${a.name} fired but no ${role} died`);
    event.nodes = [nodeName(dead)];
    const interesting = new Set(
      role === "coordinator"
        ? this.txnGroups()
        : [...this.ctx.keys.map((k) => `${k.topic}/${k.partition}`), ...this.offsetsGroups()],
    );
    event.groups = ledBy(before, dead).filter((g) => interesting.has(g));
    event.killToLeaderS = await this.newLeaderS(dead, event.groups, killMs);
    await sleep(a.restartAfterMs);
    await this.restart(dead);
    event.healToLsoS = await this.lsoAdvancingS();
  }

  /** Arm a hold failpoint; once a process reached it, wait out its hold and see the LSO move. */
  private async failpointHold(
    a: Extract<FaultAction, { kind: "failpoint-hold" }>,
    event: FaultEvent,
  ): Promise<void> {
    const file = join(this.ctx.cluster.onceDir, a.name);
    rmSync(file, { force: true });
    const fired = await pollUntil(HOLD_FIRE_WAIT_MS, 50, async () =>
      existsSync(file) ? true : undefined,
    );
    if (!fired) {
      writeFileSync(file, "disarmed"); // nothing reached it in time: disarm again
      event.note = `failpoint ${a.name} did not fire within ${HOLD_FIRE_WAIT_MS} ms`;
      return;
    }
    const heldMs = this.ctx.clock.nowMs();
    event.killMs = Math.round(heldMs);
    event.note = `failpoint ${a.name} held a proposal for ${a.holdMs} ms`;
    await sleep(Math.max(0, heldMs + a.holdMs - this.ctx.clock.nowMs()));
    event.healToLsoS = await this.lsoAdvancingS();
  }

  /** Step the wall clocks of some nodes back and forth; every timeout, expiry and retention must hold. */
  private async clockSkew(
    a: Extract<FaultAction, { kind: "clock-skew" }>,
    event: FaultEvent,
  ): Promise<void> {
    const nodes: NodeRef[] = [];
    for (const t of a.targets) {
      const n = await this.resolve(t);
      if (n && !nodes.some((x) => nodeName(x) === nodeName(n))) nodes.push(n);
    }
    if (nodes.length === 0) throw new Error("no live node to skew");
    event.nodes = nodes.map(nodeName);
    const notes: string[] = [];
    const missed: string[] = [];
    // A transaction on the first target's __transaction_state partition, open across the steps.
    const t0 = a.targets[0];
    const probe =
      t0?.kind === "leader" && t0.topic === TRANSACTION_STATE_TOPIC
        ? new SkewProbe(
            {
              clients: this.ctx.clients,
              clock: this.ctx.clock,
              topic: this.ctx.zombieTopic,
              prefix: this.ctx.zombiePrefix,
              recordTxn: this.ctx.recordTxn,
            },
            event.step,
            t0.partition,
          )
        : undefined;
    if (probe) {
      this.extraTransactionalIds.push(probe.transactionalId);
      this.extraKeys.push(probe.key);
      const failed = await probe.open();
      if (failed) notes.push(failed);
    }
    const jump = async (offsetOf: (i: number) => number): Promise<string> => {
      nodes.forEach((n, i) => {
        setClockOffset(this.ctx.cluster, n, offsetOf(i));
        this.skewed.set(nodeName(n), n);
      });
      const applied = await Promise.all(
        nodes.map(async (n, i) =>
          !this.ctx.cluster.alive(n) || (await waitClockApplied(this.ctx.cluster, n, offsetOf(i)))
            ? undefined
            : nodeName(n),
        ),
      );
      missed.push(...applied.filter((x): x is string => x !== undefined));
      return nodes.map((n, i) => `${nodeName(n)} ${formatOffset(offsetOf(i))}`).join(", ");
    };
    // Live nodes the controller declares dead meanwhile: a lease expired by a clock step.
    const declaredDead = new Set<string>();
    let watching = true;
    const watch = (async (): Promise<void> => {
      while (watching) {
        const m = await this.ctx.clients.metadata(true).catch(() => undefined);
        for (const n of m?.nodes ?? []) {
          const ref: NodeRef = { role: n.role, id: n.nodeId };
          if (!n.alive && this.ctx.cluster.alive(ref)) declaredDead.add(nodeName(ref));
        }
        await sleep(POLL_MS * 2);
      }
    })();
    try {
      for (const j of a.jumps) {
        notes.push(await jump((i) => j.offsetsMs[i % j.offsetsMs.length] ?? 0));
        event.killMs ??= Math.round(this.ctx.clock.nowMs());
        await this.sleepUnlessStopped(j.holdMs);
      }
      await jump(() => 0); // back to true time: a jump too
    } finally {
      watching = false;
      await watch;
    }
    if (declaredDead.size > 0)
      notes.push(`declared dead while running: ${[...declaredDead].sort().join(",")}`);
    for (const n of nodes) this.skewed.delete(nodeName(n));
    const probed = probe ? await probe.commit() : undefined;
    if (probed?.violation) event.violations = [probed.violation];
    event.note =
      (missed.length > 0
        ? `did not fire: ${[...new Set(missed)].join(",")} never applied its offset within ${CLOCK_APPLY_WAIT_MS} ms`
        : `wall clocks applied by every process: ${notes.join(" | ")}, then back to true time`) +
      (probed ? `; ${probed.note}` : "");
    event.healToLsoS = await this.lsoAdvancingS();
  }

  /**
   * Add the spare broker, remove the broker leading a workload partition until the controller
   * re-placed its replicas and the moved partitions have leaders again, bring it back.
   */
  private async membershipChange(
    a: Extract<FaultAction, { kind: "membership-change" }>,
    event: FaultEvent,
  ): Promise<void> {
    const notes: string[] = [];
    const spare = SPARE_BROKER;
    if (!this.ctx.cluster.specs.some((s) => s.role === spare.role && s.id === spare.id)) {
      const addedMs = this.ctx.clock.nowMs();
      this.ctx.cluster.start(spare);
      await this.ctx.cluster.processes.waitForHealth({ timeoutMs: HEALTH_WAIT_MS, only: [spare] });
      const registered = await pollUntil(MEMBERSHIP_WAIT_MS, POLL_MS, async () => {
        const m = await this.ctx.clients.metadata(true);
        return m.nodes.some((n) => n.role === spare.role && n.nodeId === spare.id && n.alive)
          ? true
          : undefined;
      });
      if (!registered) throw new Error(`${nodeName(spare)} was started but never registered alive`);
      notes.push(
        `added ${nodeName(spare)} (alive in metadata after ${((this.ctx.clock.nowMs() - addedMs) / 1000).toFixed(1)} s)`,
      );
    } else notes.push(`${nodeName(spare)} already a member`);
    const removed = await this.resolve(a.remove);
    if (!removed) throw new Error("no live broker to remove");
    event.nodes = [nodeName(removed)];
    event.groups = await this.groupsLedBy(removed);
    const before = await this.ctx.clients.metadata(true);
    const hosted = this.watchedPartitions(before).filter((p) => p.replicas.includes(removed.id));
    const killMs = this.ctx.clock.nowMs();
    event.killMs = Math.round(killMs);
    this.ctx.cluster.processes.kill(removed.role, removed.id, "SIGTERM");
    const [leaderS] = await Promise.all([
      this.newLeaderS(removed, event.groups, killMs),
      this.ctx.cluster.processes.waitForExit(removed.role, removed.id, 20_000),
    ]);
    event.killToLeaderS = leaderS;
    // The controller re-places the dead broker's replicas (lease + TERN_REPLACE_DEAD_AFTER_MS),
    // the groups' leaders change their Raft membership, and every moved partition has a leader.
    const moved = await pollUntil(MEMBERSHIP_WAIT_MS, 250, async () => {
      const m = await this.ctx.clients.metadata(true);
      const now = this.watchedPartitions(m).filter((p) =>
        hosted.some((h) => h.topic === p.topic && h.partition === p.partition),
      );
      const done = now.every(
        (p) => !p.replicas.includes(removed.id) && p.leader >= 0 && p.replicas.includes(p.leader),
      );
      return done ? now : undefined;
    });
    if (!moved) {
      notes.push(
        `did not fire: the replicas of ${hosted.length} partitions on ${nodeName(removed)} were not re-placed within ${MEMBERSHIP_WAIT_MS} ms`,
      );
    } else {
      const to = new Set(moved.flatMap((p) => p.replicas));
      notes.push(
        `removed ${nodeName(removed)}: ${moved.length} workload partitions re-placed after ${((this.ctx.clock.nowMs() - killMs) / 1000).toFixed(1)} s (replicas now on brokers ${[...to].sort().join(",")}; leaders ${moved.map((p) => `${p.topic.slice(-6)}/${p.partition}:${p.leader}`).join(" ")})`,
      );
      notes.push(await this.joinedAsPeers(hosted, moved));
    }
    await this.sleepUnlessStopped(a.returnAfterMs);
    await this.restart(removed);
    notes.push(`${nodeName(removed)} back without the moved replicas`);
    event.note = notes.join("; ");
    event.healToLsoS = await this.lsoAdvancingS();
  }

  /**
   * The Raft side of a re-placement: each moved partition's leader must replicate to the replica
   * that joined (its follower-lag gauge lists the newcomer as a peer, caught up within
   * MEMBERSHIP_LAG_MAX entries), bounded by MEMBERSHIP_WAIT_MS.
   */
  private async joinedAsPeers(
    before: readonly PartitionInfo[],
    after: readonly PartitionInfo[],
  ): Promise<string> {
    const pairs = new Map<string, { leader: number; peer: number }>();
    for (const p of after) {
      const old = before.find((b) => b.topic === p.topic && b.partition === p.partition);
      for (const peer of p.replicas.filter((r) => !old?.replicas.includes(r)))
        pairs.set(`${p.leader}>${peer}`, { leader: p.leader, peer });
    }
    const seen: string[] = [];
    for (const { leader, peer } of pairs.values()) {
      const node: NodeRef = { role: "broker", id: leader };
      let last: number | undefined;
      const lag = await pollUntil(MEMBERSHIP_WAIT_MS, 250, async () => {
        last = await followerLag(this.ctx.cluster.spec(node).metricsAddress, peer);
        return last !== undefined && last <= MEMBERSHIP_LAG_MAX ? last : undefined;
      });
      if (lag === undefined)
        return `did not fire: ${nodeName(node)} never replicated to broker-${peer} as a caught-up Raft peer within ${MEMBERSHIP_WAIT_MS} ms (${last === undefined ? "not a voter of any group it leads" : `worst lag ${last} entries`})`;
      seen.push(`broker-${peer} a Raft peer of ${nodeName(node)} (lag ${lag})`);
    }
    return seen.length > 0 ? seen.join(", ") : "no replica joined";
  }

  /** The workload's partitions and its groups' __consumer_offsets partitions, as metadata lists them. */
  private watchedPartitions(m: ClusterMetadata): PartitionInfo[] {
    const keys = new Set([
      ...this.ctx.keys.map((k) => `${k.topic}/${k.partition}`),
      ...this.offsetsGroups(),
    ]);
    return m.topics.flatMap((t) =>
      t.partitions.filter((p) => keys.has(`${t.name}/${p.partition}`)),
    );
  }

  private async partition(
    a: Extract<FaultAction, { kind: "partition" }>,
    event: FaultEvent,
  ): Promise<void> {
    this.ctx.partitioner.ensureAvailable();
    const endpoint = (n: NodeRef): Endpoint => ({
      name: nodeName(n),
      address: this.ctx.cluster.spec(n).address,
    });
    const all = this.ctx.cluster.specs.map((s): NodeRef => ({ role: s.role, id: s.id }));
    const leader = a.target ? await this.resolve(a.target) : undefined;
    if (a.target && !leader) throw new Error(`no live leader to cut off for ${a.split}`);
    const shape = shapeCut({
      split: a.split,
      all,
      leader,
      index: a.minorityIndex,
      direction: a.direction,
    });
    event.nodes = [shape.description];
    event.groups = leader ? await this.groupsLedBy(leader) : [];
    const rules = await this.ctx.partitioner.cutDirected(
      shape.pairs.map(([from, to]) => [endpoint(from), endpoint(to)] as const),
    );
    const cutMs = this.ctx.clock.nowMs(); // every rule took effect at once
    event.killMs = Math.round(cutMs);
    // A cut leader loses its groups when its peers stop hearing it (or it stops hearing them).
    const losesLeadership =
      leader !== undefined && (a.split === "coordinator-from-peers" || a.split === "asymmetric");
    const [leaderS] = await Promise.all([
      losesLeadership ? this.newLeaderS(leader, event.groups, cutMs) : Promise.resolve(undefined),
      this.sleepUnlessStopped(a.healAfterMs),
    ]);
    event.killToLeaderS = leaderS;
    const dropped = await this.ctx.partitioner.droppedPackets();
    event.note =
      dropped > 0
        ? `${rules} DROP rules dropped ${dropped} packets`
        : `did not fire: ${rules} DROP rules dropped no packet`;
    await this.ctx.partitioner.heal();
    event.healToLsoS = await this.lsoAdvancingS();
  }

  private async restart(node: NodeRef): Promise<void> {
    if (!this.ctx.cluster.alive(node)) this.ctx.cluster.start(node);
    await this.ctx.cluster.processes.waitForHealth({ timeoutMs: HEALTH_WAIT_MS, only: [node] });
  }

  /** Seconds until the LSO of every workload key is past where it stood now, or caught up with its high watermark. */
  async lsoAdvancingS(): Promise<number | undefined> {
    const startMs = this.ctx.clock.nowMs();
    const base = new Map<string, number>();
    const ok = await pollUntil(LSO_WAIT_MS, 200, async () => {
      for (const k of this.ctx.keys) {
        const id = `${k.topic}/${k.partition}`;
        const f = await this.ctx.clients.stableOffsets(k.topic, k.partition).catch(() => undefined);
        if (!f) return undefined;
        if (!base.has(id)) base.set(id, f.lastStableOffset);
        if (!(f.lastStableOffset > base.get(id)! || f.lastStableOffset === f.highWatermark))
          return undefined;
      }
      return true;
    });
    return ok ? (this.ctx.clock.nowMs() - startMs) / 1000 : undefined;
  }

  /** Undoes every fault still in effect and waits (bounded) for every process to serve again. */
  async heal(): Promise<void> {
    for (const n of this.skewed.values()) setClockOffset(this.ctx.cluster, n, 0);
    this.skewed.clear();
    for (const dir of this.filled) removeFiller(dir);
    this.filled.clear();
    for (const n of this.pausedRefs) this.ctx.cluster.processes.kill(n.role, n.id, "SIGCONT");
    this.paused.clear();
    this.ctx.members?.resumeAll();
    await this.ctx.partitioner.heal();
    this.ctx.late.setActive(false);
    for (const name of Object.keys(FAILPOINTS)) {
      const file = join(this.ctx.cluster.onceDir, name);
      if (!existsSync(file)) writeFileSync(file, "disarmed");
    }
    for (const n of this.ctx.cluster.dead()) this.ctx.cluster.start(n);
    await this.ctx.cluster.processes.waitForHealth({ timeoutMs: HEALTH_WAIT_MS });
  }
}

function splitGroup(g: string): [string, number] {
  const i = g.lastIndexOf("/");
  return [g.slice(0, i), Number(g.slice(i + 1))];
}

function ledBy(m: ClusterMetadata, node: NodeRef): string[] {
  const role = node.role === "coordinator" ? "coordinator" : "broker";
  return m.topics
    .filter((t) => t.role === role)
    .flatMap((t) =>
      t.partitions.filter((p) => p.leader === node.id).map((p) => `${t.name}/${p.partition}`),
    );
}

/** tern_raft_follower_lag_entries{peer} from a node's metrics (undefined: not a peer of any group it leads). */
async function followerLag(metricsAddress: string, peer: number): Promise<number | undefined> {
  try {
    const res = await fetch(`http://${metricsAddress}/metrics`, {
      signal: AbortSignal.timeout(5_000),
    });
    // The registry adds its default labels (role, node_id) to every series.
    const m = new RegExp(
      `^tern_raft_follower_lag_entries\\{[^}]*\\bpeer="${peer}"[^}]*\\} (\\S+)$`,
      "m",
    ).exec(await res.text());
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

// Opens and drops the __transaction_state/N Raft groups this node replicates, as the
// controller placed them, and reports this node's leaderships back to the controller. Driven
// by every metadata view (and re-run every few seconds); passes run one at a time and each is
// bounded. Replica moves (docs/reassignment.md): where this node leads a partition group, the
// reassignment driver moves its voters to the placed replicas; a replica left out of the set
// keeps the group (and may keep coordinating as its leader) until its own log has applied a
// configuration without it, and only then drops it.
import type { Logger } from "../../libs/common/logger.js";
import { partitionGroupId } from "../../libs/metadata/lookup.js";
import { ReassignmentDriver, removalCommittedLocally } from "../../libs/metadata/reassignment.js";
import { TRANSACTION_STATE_TOPIC, type ClusterMetadata } from "../../libs/metadata/types.js";
import type { RaftHostApi } from "../../libs/raft-host/api.js";
import type { TransactionCoordinator } from "./transaction-coordinator.js";
import { TransactionStateMachine } from "./transaction-state-machine.js";

/** Bound on groups opened or dropped in one pass (the next view continues). */
const GROUP_CHANGES_PER_PASS_MAX = 64;
/** Period of the pass without a new view (pending drops, reassignment retries). */
const PASS_INTERVAL_MS_DEFAULT = 2_000;

export interface LeaderReport {
  readonly topic: string;
  readonly partition: number;
  readonly leader: number;
  readonly term: number;
}

export interface PartitionManagerOptions {
  readonly host: RaftHostApi;
  readonly coordinator: TransactionCoordinator;
  readonly nodeId: number;
  readonly logger: Logger;
  readonly reportLeaders: (changes: LeaderReport[]) => Promise<void>;
  readonly passIntervalMs?: number;
}

export class PartitionManager {
  private readonly open = new Set<number>();
  private chain: Promise<void> = Promise.resolve();
  private latest: ClusterMetadata | undefined;
  private readonly unsubscribe: () => void;
  private closed = false;
  private readonly reassignment: ReassignmentDriver;
  private readonly timer: NodeJS.Timeout;
  private passQueued = false;
  private readonly loggedMembership = new Map<number, string>();

  constructor(private readonly options: PartitionManagerOptions) {
    this.reassignment = new ReassignmentDriver({ nodeId: options.nodeId, logger: options.logger, nowMs: () => performance.now() });
    this.unsubscribe = options.host.onLeaderChange((change) => {
      const partition = partitionOfGroup(change.groupId);
      if (partition === undefined || !this.open.has(partition) || change.leader !== options.nodeId) return;
      void this.report([{ topic: TRANSACTION_STATE_TOPIC, partition, leader: change.leader, term: change.term }]);
      this.queuePass(); // a new leader picks up an unfinished move at once
    });
    this.timer = setInterval(() => this.queuePass(), options.passIntervalMs ?? PASS_INTERVAL_MS_DEFAULT);
    this.timer.unref();
  }

  /** Runs the pass again on the latest view unless one is already queued. */
  private queuePass(): void {
    if (this.passQueued || this.latest === undefined || this.closed) return;
    this.passQueued = true;
    this.chain = this.chain.then(() => {
      this.passQueued = false;
      return this.pass();
    }).catch((e: unknown) => this.options.logger.error({ err: e }, "transaction partition pass failed"));
  }

  /** Applies a metadata view; resolves once this pass is done (passes are serialized). */
  update(m: ClusterMetadata): Promise<void> {
    this.latest = m;
    this.chain = this.chain.then(() => this.pass()).catch((e: unknown) => this.options.logger.error({ err: e }, "transaction partition pass failed"));
    return this.chain;
  }

  hostedPartitions(): number[] {
    return [...this.open].sort((a, b) => a - b);
  }

  private async pass(): Promise<void> {
    const m = this.latest;
    if (m === undefined || this.closed) return;
    const { host, nodeId, coordinator } = this.options;
    for (const n of m.nodes) if (n.role === "coordinator" && n.nodeId !== nodeId) host.setPeerAddress(n.nodeId, n.address);
    const topic = m.topics.find((t) => t.name === TRANSACTION_STATE_TOPIC);
    if (topic === undefined) return;
    const wanted = new Map(topic.partitions.filter((p) => p.replicas.includes(nodeId)).map((p) => [p.partition, p]));
    let changes = 0;
    for (const [partition, p] of wanted) {
      if (this.open.has(partition) || changes >= GROUP_CHANGES_PER_PASS_MAX) continue;
      changes++;
      const sm = new TransactionStateMachine(partition);
      const group = await host.openGroup({ groupId: partitionGroupId(TRANSACTION_STATE_TOPIC, partition), initialVoters: p.replicas, stateMachine: sm });
      this.open.add(partition);
      coordinator.addPartition(partition, group, sm);
    }
    for (const partition of [...this.open]) {
      if (wanted.has(partition) || changes >= GROUP_CHANGES_PER_PASS_MAX) continue;
      const groupId = partitionGroupId(TRANSACTION_STATE_TOPIC, partition);
      const group = host.group(groupId);
      // Still a member as far as this replica's log knows: keep it until the removal is applied here.
      if (group !== undefined && !removalCommittedLocally(group.status().confState, nodeId)) continue;
      changes++;
      this.options.logger.info({ groupId, voters: group?.status().confState.voters }, "dropping a transaction-log replica removed from the group");
      coordinator.removePartition(partition);
      this.open.delete(partition);
      this.loggedMembership.delete(partition);
      await host.dropGroup(groupId).catch((e: unknown) => this.options.logger.warn({ err: e, partition }, "dropGroup failed"));
    }
    this.reconcileMemberships(m, topic.partitions);
    // Leaderships the controller has not heard of yet (a lost report, a controller failover).
    const stale: LeaderReport[] = [];
    for (const partition of this.open) {
      const group = host.group(partitionGroupId(TRANSACTION_STATE_TOPIC, partition));
      const known = wanted.get(partition);
      if (group?.isLeader() && known !== undefined && (known.leader !== nodeId || known.leaderTerm < group.term())) {
        stale.push({ topic: TRANSACTION_STATE_TOPIC, partition, leader: nodeId, term: group.term() });
      }
    }
    if (stale.length > 0) await this.report(stale);
  }

  private reconcileMemberships(m: ClusterMetadata, partitions: readonly { partition: number; replicas: number[] }[]): void {
    const live = new Set(m.nodes.filter((n) => n.role === "coordinator" && n.alive).map((n) => n.nodeId));
    const isLive = (id: number): boolean => live.has(id);
    const byPartition = new Map(partitions.map((p) => [p.partition, p.replicas]));
    for (const partition of this.open) {
      const group = this.options.host.group(partitionGroupId(TRANSACTION_STATE_TOPIC, partition));
      if (group === undefined) continue;
      const { voters, learners } = group.status().confState;
      const key = `${voters.join(",")}|${learners.join(",")}`;
      if (this.loggedMembership.get(partition) !== key) {
        this.loggedMembership.set(partition, key);
        this.options.logger.info({ groupId: group.groupId, voters, learners, applied: group.appliedIndex() }, "replica membership");
      }
      const replicas = byPartition.get(partition);
      if (group.isLeader() && replicas !== undefined && replicas.length > 0) this.reassignment.reconcile(group, { replicas, isLive });
    }
  }

  private async report(changes: LeaderReport[]): Promise<void> {
    try {
      await this.options.reportLeaders(changes);
    } catch (e) {
      this.options.logger.info({ err: e, partitions: changes.map((c) => c.partition) }, "reporting leaders failed; the next metadata view retries");
    }
  }

  close(): void {
    this.closed = true;
    clearInterval(this.timer);
    this.unsubscribe();
  }
}

function partitionOfGroup(groupId: string): number | undefined {
  const prefix = `${TRANSACTION_STATE_TOPIC}/`;
  if (!groupId.startsWith(prefix)) return undefined;
  const n = Number(groupId.slice(prefix.length));
  return Number.isInteger(n) && n >= 0 ? n : undefined;
}

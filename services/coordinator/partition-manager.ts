// The __transaction_state/N Raft groups this coordinator replicates, as the controller placed
// them. The shared reconciler (libs/raft-host/group-reconciler.ts) opens and drops them, points
// the host at peer coordinators, moves voters where this node leads (docs/reassignment.md) and
// reports leaderships to the controller; this file says what is coordinator-specific: each group
// gets a TransactionStateMachine and is handed to the transaction coordinator once open, and
// taken from it before the group is dropped. A replica left out of the set keeps the group (and
// may keep coordinating as its leader) until its own log has applied a configuration without it.
import type { Logger } from "../../libs/common/logger.js";
import { partitionGroupId } from "../../libs/metadata/lookup.js";
import { TRANSACTION_STATE_TOPIC, type ClusterMetadata } from "../../libs/metadata/types.js";
import type { RaftGroup, RaftHostApi } from "../../libs/raft-host/api.js";
import {
  GroupReconciler,
  type GroupPlacement,
  type LeaderReport,
} from "../../libs/raft-host/group-reconciler.js";
import { TransactionStateMachine } from "./transaction-state-machine.js";

/** Bound on groups opened or dropped in one pass (the next pass continues). */
const GROUP_CHANGES_PER_PASS_MAX = 64;
/** Period of the pass without a new view (pending drops, reassignment retries). */
const PASS_INTERVAL_MS_DEFAULT = 2_000;

/**
 * What this manager needs of whoever serves the transaction log (TransactionCoordinator today):
 * a partition's group and state machine once it is open here, and their removal before it is
 * dropped. The owner follows each group's leadership itself; this manager relays none (it only
 * reports leaderships to the controller).
 */
export interface TransactionPartitionOwner {
  addPartition(partition: number, group: RaftGroup, sm: TransactionStateMachine): void;
  removePartition(partition: number): void;
}

export interface PartitionManagerOptions {
  readonly host: RaftHostApi;
  readonly coordinator: TransactionPartitionOwner;
  readonly nodeId: number;
  readonly logger: Logger;
  readonly reportLeaders: (changes: LeaderReport[]) => Promise<void>;
  readonly passIntervalMs?: number;
}

export class PartitionManager {
  private readonly reconciler: GroupReconciler<number>;

  constructor(private readonly options: PartitionManagerOptions) {
    this.reconciler = new GroupReconciler<number>({
      host: options.host,
      nodeId: options.nodeId,
      role: "coordinator",
      logger: options.logger,
      nowMs: () => performance.now(),
      reportLeaders: options.reportLeaders,
      passIntervalMs: options.passIntervalMs ?? PASS_INTERVAL_MS_DEFAULT,
      changesPerPassMax: GROUP_CHANGES_PER_PASS_MAX,
      hooks: {
        placements: transactionLogPlacements,
        open: (p) => this.open(p),
        release: (partition) => options.coordinator.removePartition(partition),
      },
    });
  }

  /** Applies a metadata view; resolves once it is applied (passes are serialized). */
  update(m: ClusterMetadata): Promise<void> {
    return this.reconciler.update(m);
  }

  hostedPartitions(): number[] {
    return [...this.reconciler.entries()].sort((a, b) => a - b);
  }

  private async open(p: GroupPlacement): Promise<number> {
    const sm = new TransactionStateMachine(p.partition);
    const group = await this.options.host.openGroup({
      groupId: p.groupId,
      initialVoters: [...p.replicas],
      stateMachine: sm,
    });
    this.options.coordinator.addPartition(p.partition, group, sm);
    return p.partition;
  }

  close(): void {
    this.reconciler.close();
  }
}

/** Every partition group of the transaction log in the view. */
function transactionLogPlacements(m: ClusterMetadata): GroupPlacement[] {
  const topic = m.topics.find((t) => t.name === TRANSACTION_STATE_TOPIC);
  if (topic === undefined) return [];
  return topic.partitions.map((p) => ({
    groupId: partitionGroupId(TRANSACTION_STATE_TOPIC, p.partition),
    topic: TRANSACTION_STATE_TOPIC,
    partition: p.partition,
    replicas: p.replicas,
    leader: p.leader,
    leaderTerm: p.leaderTerm,
  }));
}

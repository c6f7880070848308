// A partition replica hosted by this broker: its Raft group, its state machine and the topic
// config the leader stamps into every entry it proposes.
import type { RaftGroup } from "../../libs/raft-host/api.js";
import type { EntryHeader } from "./partition-entry.js";
import type { PartitionStateMachine } from "./partition-state-machine.js";
import { topicConfigNumber } from "./broker-limits.js";
import { compactionConfig, type CompactionConfig } from "./compaction-config.js";

/** The numbers a partition's topic config sets, parsed once per config change, not per request. */
interface ConfigNumbers {
  readonly retentionMs: number;
  readonly retentionBytes: number;
  readonly producerExpiryMs: number;
  readonly maxMessageBytes: number;
}

function configNumbers(config: Record<string, string>): ConfigNumbers {
  // cleanup.policy=compact alone keeps everything retention would delete (Kafka's meaning).
  const retains = compactionConfig(config).delete;
  return {
    retentionMs: retains ? topicConfigNumber(config, "retention.ms") : -1,
    retentionBytes: retains ? topicConfigNumber(config, "retention.bytes") : -1,
    producerExpiryMs: topicConfigNumber(config, "producer.id.expiration.ms"),
    maxMessageBytes: topicConfigNumber(config, "max.message.bytes"),
  };
}

export class LocalPartition {
  private numbers = configNumbers({});
  private compactionSettings: CompactionConfig = compactionConfig({});
  /** The config last applied (every metadata view carries it again: unchanged ones are skipped). */
  private configKey: string | undefined;
  /** A time-only entry should go out soon, so replicas apply a changed config (replica-manager.ts). */
  tickDue = false;
  /** When this replica, leading, last proposed a time-only entry (monotonic ms). */
  tickProposedAtMs = -Infinity;

  constructor(
    readonly topic: string,
    readonly partition: number,
    readonly group: RaftGroup,
    readonly stateMachine: PartitionStateMachine,
  ) {}

  /** Applies the topic config; a change after the first marks a time-only entry due. */
  setConfig(config: Record<string, string>): void {
    const key = JSON.stringify(config);
    if (key === this.configKey) return;
    if (this.configKey !== undefined) this.tickDue = true;
    this.configKey = key;
    this.numbers = configNumbers(config);
    this.compactionSettings = compactionConfig(config);
    // A compacted topic's active segment also rolls at max.compaction.lag.ms, so it can be cleaned.
    const segmentMs = topicConfigNumber(config, "segment.ms");
    this.stateMachine.setSegmentConfig(
      topicConfigNumber(config, "segment.bytes"),
      this.compactionSettings.compact
        ? Math.min(segmentMs, this.compactionSettings.maxCompactionLagMs)
        : segmentMs,
    );
  }

  /** The topic's compaction settings (the cleaner reads them each time it chooses). */
  compaction(): CompactionConfig {
    return this.compactionSettings;
  }

  /** Values travel in the entry so apply() stays deterministic on every replica. */
  entryHeader(nowMs: number): EntryHeader {
    const { retentionMs, retentionBytes, producerExpiryMs } = this.numbers;
    return { appendTimeMs: nowMs, retentionMs, retentionBytes, producerExpiryMs };
  }

  /**
   * Hands leadership to the follower with the highest match (a leader whose own segment is
   * damaged steps down so that a sound replica serves); false when it does not lead or has no
   * follower to hand it to.
   */
  stepDown(): boolean {
    if (!this.group.isLeader()) return false;
    const status = this.group.status();
    let best = -1;
    let bestMatch = -1;
    for (const [id, pr] of status.progress) {
      if (id === status.id || pr.isLearner) continue;
      if (pr.match > bestMatch) {
        best = id;
        bestMatch = pr.match;
      }
    }
    if (best < 0) return false;
    this.group.transferLeadership(best);
    return true;
  }

  maxMessageBytes(): number {
    return this.numbers.maxMessageBytes;
  }
}

/** What the request handlers need from the replica manager (and from metadata). */
export interface PartitionDirectory {
  /** The local replica, if this broker hosts one. */
  local(topic: string, partition: number): LocalPartition | undefined;
  /** Whether metadata knows the topic/partition, and whether clients may write it. */
  lookup(topic: string, partition: number): "ok" | "unknown" | "internal";
  /** The endpoint of a broker by node id (-1 / unknown gives node_id -1, empty address). */
  endpoint(nodeId: number): { nodeId: number; address: string };
  /** The leader named by metadata for a partition this broker does not host. */
  metadataLeader(topic: string, partition: number): number;
  /** Every local replica. */
  locals(): Iterable<LocalPartition>;
}

// Repair of a damaged sealed segment (docs/storage.md, "Corruption and repair"): the replica
// asks another replica of the partition, the Raft leader first, for the segment's records by
// Raft index (ReadReplicaRecords), checks each one (checksum, consecutive indexes, terms and
// offsets against what it knows of the segment) while writing them to a temporary file, then
// swaps that file in (fsync, rename, index rebuilt). The Raft log, hard state and commit are not
// touched: the replica keeps voting and acknowledging on its sound log after its snapshot, as
// before. Bounded: a few attempts with a growing pause; after the last one the segment stays
// refused (logged), as when no other replica holds it (a partition of one replica).
import type { SchedulingClock, TimerHandle } from "../../libs/runtime/scheduler.js";
import type { RandomSource } from "../../libs/runtime/random-source.js";
import { TernError, type ErrorName } from "../../libs/common/errors.js";
import type { Logger } from "../../libs/common/logger.js";
import { decodeRecords } from "../../libs/storage/log-record.js";
import type { SegmentReplacement } from "../../libs/storage/segment-replacement.js";
import type { DamageReport } from "../../libs/storage/segmented-log.js";
import type { LocalPartition } from "./local-partition.js";
import { REPLICA_RECORDS_BYTES_DEFAULT } from "./replica-records-handler.js";

export const REPAIR_ATTEMPTS_MAX = 8;
const REPAIR_BACKOFF_MS_FIRST = 500;
const REPAIR_BACKOFF_MS_MAX = 30_000;

/** One ReadReplicaRecords answer, as the repair needs it. */
export interface ReplicaRecordsAnswer {
  readonly errorCode: string;
  readonly errorMessage: string;
  readonly records: Buffer;
  readonly lastIndex: string;
}

export interface SegmentRepairDeps {
  readonly nodeId: number;
  /** The other replicas of the partition by node id (metadata's list). */
  readonly replicasOf: (local: LocalPartition) => readonly number[];
  /** A broker's address; undefined when metadata does not know it. */
  readonly address: (nodeId: number) => string | undefined;
  readonly read: (
    address: string,
    request: {
      topic: string;
      partition: number;
      fromIndex: string;
      toIndex: string;
      maxBytes: number;
    },
  ) => Promise<ReplicaRecordsAnswer>;
  readonly clock: SchedulingClock;
  /** Spreads the pauses between attempts. */
  readonly random: RandomSource;
  readonly logger: Logger;
  /** Attempts before giving up, and the first pause (doubled each time, at most 30 s). */
  readonly attemptsMax?: number;
  readonly backoffMsFirst?: number;
}

export class SegmentRepairer {
  /** Repairs under way, by partition and segment. */
  private readonly running = new Map<string, LocalPartition>();
  /** Pauses between attempts: close() ends them. */
  private readonly pauses = new Map<TimerHandle, () => void>();
  private closed = false;

  constructor(private readonly deps: SegmentRepairDeps) {}

  /** Starts repairing a damaged segment of a local replica (once per segment at a time). */
  repair(local: LocalPartition, damage: DamageReport): void {
    const key = `${local.topic}/${local.partition}@${damage.firstIndex}`;
    if (this.closed || this.running.has(key)) return;
    this.running.set(key, local);
    void this.run(local, damage).finally(() => this.running.delete(key));
  }

  close(): void {
    this.closed = true;
    for (const [t, resolve] of this.pauses) {
      this.deps.clock.clearTimeout(t);
      resolve();
    }
    this.pauses.clear();
  }

  private async run(local: LocalPartition, damage: DamageReport): Promise<void> {
    const attemptsMax = this.deps.attemptsMax ?? REPAIR_ATTEMPTS_MAX;
    const log = {
      groupId: `${local.topic}/${local.partition}`,
      file: damage.file,
      firstIndex: damage.firstIndex,
      lastIndex: damage.lastIndex,
    };
    let pauseMs = this.deps.backoffMsFirst ?? REPAIR_BACKOFF_MS_FIRST;
    const failures: string[] = [];
    for (let attempt = 1; attempt <= attemptsMax && !this.closed; attempt++) {
      const replacement = local.stateMachine.beginSegmentReplacement(damage.firstIndex);
      if (replacement === undefined) {
        this.deps.logger.info(log, "damaged partition segment is gone (retention): no repair");
        return;
      }
      const started = this.deps.clock.nowMs();
      for (const source of this.sources(local)) {
        try {
          const swapped = await this.fetchInto(local, source, replacement);
          if (!swapped) {
            this.deps.logger.info(log, "damaged partition segment is gone (retention): no repair");
            return;
          }
          this.deps.logger.info(
            {
              ...log,
              source,
              bytes: replacement.writtenBytes,
              attempt,
              durationMs: this.deps.clock.nowMs() - started,
            },
            "partition segment repaired from another replica's records",
          );
          return;
        } catch (e) {
          failures.push(`attempt ${attempt}, broker ${source}: ${(e as Error).message}`);
          // The records written so far stay: the next source continues after them.
          if (this.closed) break;
        }
      }
      await replacement.abort();
      if (failures.length === 0) failures.push(`attempt ${attempt}: no other replica to ask`);
      if (attempt < attemptsMax) {
        await this.pause(pauseMs);
        pauseMs = Math.min(pauseMs * 2, REPAIR_BACKOFF_MS_MAX);
      }
    }
    if (this.closed) return;
    this.deps.logger.error(
      { ...log, attempts: attemptsMax, failures: failures.slice(-3) },
      "partition segment not repaired: its records stay refused on this replica",
    );
  }

  /** The partition's Raft leader first, then its other replicas; never this broker. */
  private sources(local: LocalPartition): number[] {
    const out: number[] = [];
    const leader = local.group.leader();
    if (leader >= 0 && leader !== this.deps.nodeId) out.push(leader);
    for (const id of this.deps.replicasOf(local))
      if (id !== this.deps.nodeId && !out.includes(id)) out.push(id);
    return out;
  }

  /** Reads the rest of the segment's records from one replica into the replacement, then swaps it in. */
  private async fetchInto(
    local: LocalPartition,
    source: number,
    replacement: SegmentReplacement,
  ): Promise<boolean> {
    const address = this.deps.address(source);
    if (address === undefined) throw new Error("no address in metadata");
    while (!replacement.complete()) {
      const answer = await this.deps.read(address, {
        topic: local.topic,
        partition: local.partition,
        fromIndex: String(replacement.needsIndex),
        toIndex: String(replacement.lastIndex),
        maxBytes: REPLICA_RECORDS_BYTES_DEFAULT,
      });
      if (answer.errorCode !== "NONE" && answer.errorCode !== "")
        throw new TernError(answer.errorCode as ErrorName, answer.errorMessage);
      // Checked here (each record's CRC-32) and by the replacement (indexes, terms, offsets).
      const records = decodeRecords(answer.records);
      if (records.length === 0)
        throw new Error(
          `it has applied up to index ${answer.lastIndex}, ${replacement.needsIndex} is needed`,
        );
      await replacement.append(records);
    }
    return replacement.finish();
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = this.deps.clock.setTimeout(
        () => {
          this.pauses.delete(t);
          resolve();
        },
        ms * (0.75 + this.deps.random.next() / 2),
      );
      this.pauses.set(t, resolve);
    });
  }
}

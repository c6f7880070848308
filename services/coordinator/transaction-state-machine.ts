// The state machine of one __transaction_state/N Raft group (Kafka's TransactionStateManager
// cache). Every replica applies the same entries in the same order, so every replica holds the
// same map transactional id -> latest record; a new leader is warm. apply() is deterministic:
// time comes from the entries. An illegal transition is refused the same way on every replica
// (the state stays unchanged) and reported to the proposer.
import { assert } from "../../libs/common/assert.js";
import type { AppliedEntry, StateMachine } from "../../libs/raft-host/state-machine.js";
import { decodeEntry, decodeRecordJson, encodeRecordJson } from "./transaction-log.js";
import { isExpired, isValidTransition, type TxnRecord } from "./transaction-metadata.js";

export type TxnApplyResult =
  | { readonly kind: "txn"; readonly ok: true; readonly record: TxnRecord }
  | { readonly kind: "txn"; readonly ok: false; readonly reason: string }
  | { readonly kind: "noop" }
  | { readonly kind: "expire"; readonly removed: number };

const SNAPSHOT_VERSION = 1;

export class TransactionStateMachine implements StateMachine<TxnApplyResult> {
  private readonly records = new Map<string, TxnRecord>();
  private lastAppliedIndex = 0;

  constructor(readonly partition: number) {}

  apply(entry: AppliedEntry): TxnApplyResult {
    assert(
      entry.index > this.lastAppliedIndex,
      () => `apply index ${entry.index} after ${this.lastAppliedIndex}`,
    );
    this.lastAppliedIndex = entry.index;
    const decoded = decodeEntry(entry.data);
    switch (decoded.kind) {
      case "noop":
        return { kind: "noop" };
      case "expire": {
        let removed = 0;
        for (const id of decoded.transactionalIds) {
          const record = this.records.get(id);
          if (record !== undefined && isExpired(record, decoded.nowMs, decoded.expirationMs)) {
            this.records.delete(id);
            removed++;
          }
        }
        return { kind: "expire", removed };
      }
      case "txn":
        return this.applyRecord(decoded.record);
    }
  }

  private applyRecord(next: TxnRecord): TxnApplyResult {
    const prev = this.records.get(next.transactionalId);
    if (!isValidTransition(prev?.state, next.state)) {
      return {
        kind: "txn",
        ok: false,
        reason: `illegal transition ${prev?.state ?? "(none)"} -> ${next.state}`,
      };
    }
    if (
      prev !== undefined &&
      next.producerId === prev.producerId &&
      next.producerEpoch < prev.producerEpoch
    ) {
      return {
        kind: "txn",
        ok: false,
        reason: `epoch ${next.producerEpoch} below ${prev.producerEpoch}`,
      };
    }
    this.records.set(next.transactionalId, next);
    return { kind: "txn", ok: true, record: next };
  }

  get(transactionalId: string): TxnRecord | undefined {
    return this.records.get(transactionalId);
  }

  all(): IterableIterator<TxnRecord> {
    return this.records.values();
  }

  size(): number {
    return this.records.size;
  }

  appliedIndex(): number {
    return this.lastAppliedIndex;
  }

  /** Only the latest record per id, sorted by id so equal states give equal bytes. */
  snapshot(): Uint8Array {
    const ids = [...this.records.keys()].sort();
    const body = {
      v: SNAPSHOT_VERSION,
      partition: this.partition,
      records: ids.map((id) => encodeRecordJson(this.records.get(id)!)),
    };
    return new TextEncoder().encode(JSON.stringify(body));
  }

  restore(data: Uint8Array, index: number): void {
    const body = JSON.parse(new TextDecoder().decode(data)) as {
      v: unknown;
      partition: unknown;
      records: unknown;
    };
    assert(body.v === SNAPSHOT_VERSION, () => `snapshot version ${String(body.v)}`);
    assert(
      body.partition === this.partition,
      () => `snapshot of partition ${String(body.partition)} restored into ${this.partition}`,
    );
    assert(Array.isArray(body.records), "snapshot records is an array");
    this.records.clear();
    for (const j of body.records) {
      const record = decodeRecordJson(j);
      this.records.set(record.transactionalId, record);
    }
    this.lastAppliedIndex = index;
  }
}

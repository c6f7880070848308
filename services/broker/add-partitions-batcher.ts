// One AddPartitionsToTxn for the partitions of one producer's transaction that a broker leads and
// verifies (or adds, KIP-890 part 2) in the same event-loop turn. The first batches of a
// transaction reach their leaders together, and a broker leading several of its partitions asked
// the coordinator once per partition: each call is a request the coordinator leader handles and
// waits on the transactional id's lock for, where one call serves them all. The coordinator
// answers each partition on its own (one it does not know yet is refused alone, retriably), so
// a produce request's partition never fails for another's; a whole-request refusal concerns the
// producer's transaction (fenced, timed out, too many partitions) and so every partition in it.
import type { ErrorName } from "../../libs/common/errors.js";
import type { Scheduler } from "../../libs/runtime/scheduler.js";

/** Partitions one request carries at most; more start a second request. */
export const ADD_BATCH_PARTITIONS_MAX = 1_000;

export interface AddRequest {
  readonly transactionalId: string;
  readonly producerId: string;
  readonly producerEpoch: number;
  readonly partitions: Array<{ topic: string; partition: number }>;
  readonly verifyOnly: boolean;
}

export interface PartitionResult {
  readonly errorCode: ErrorName | string;
  readonly errorMessage: string;
}

/** Sends one request to the coordinator at address; a rejection fails every partition in it. */
export type SendAdd = (
  address: string,
  request: AddRequest,
  timeoutMs: number,
) => Promise<ReadonlyArray<{
  topicPartition?: { topic?: string; partition?: number } | null;
  errorCode?: string;
  errorMessage?: string;
}> | null>;

interface Waiter {
  readonly topic: string;
  readonly partition: number;
  readonly resolve: (r: PartitionResult) => void;
  readonly reject: (e: unknown) => void;
}

interface Pending {
  readonly address: string;
  readonly request: Omit<AddRequest, "partitions">;
  readonly waiters: Waiter[];
  timeoutMs: number;
}

export class AddPartitionsBatcher {
  private readonly pending = new Map<string, Pending>();
  private flushScheduled = false;

  constructor(
    private readonly send: SendAdd,
    /** Where the end-of-turn flush is scheduled (the process runtime's). */
    private readonly scheduler: Scheduler,
  ) {}

  /** The coordinator's answer for this one partition, sent with whatever else joins this turn. */
  add(
    address: string,
    request: Omit<AddRequest, "partitions">,
    topic: string,
    partition: number,
    timeoutMs: number,
  ): Promise<PartitionResult> {
    const key = [
      address,
      request.transactionalId,
      request.producerId,
      request.producerEpoch,
      request.verifyOnly,
    ].join("\u0000");
    let p = this.pending.get(key);
    if (!p) {
      p = { address, request, waiters: [], timeoutMs };
      this.pending.set(key, p);
    }
    p.timeoutMs = Math.min(p.timeoutMs, timeoutMs);
    const answer = new Promise<PartitionResult>((resolve, reject) =>
      p.waiters.push({ topic, partition, resolve, reject }),
    );
    if (p.waiters.length >= ADD_BATCH_PARTITIONS_MAX) {
      this.pending.delete(key);
      this.sendOne(p);
    } else if (!this.flushScheduled) {
      this.flushScheduled = true;
      this.scheduler.setImmediate(() => this.flush());
    }
    return answer;
  }

  private flush(): void {
    this.flushScheduled = false;
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const p of all) this.sendOne(p);
  }

  private sendOne(p: Pending): void {
    const partitions = p.waiters.map((w) => ({ topic: w.topic, partition: w.partition }));
    this.send(p.address, { ...p.request, partitions }, p.timeoutMs).then(
      (answered) => {
        const results = answered ?? [];
        // One result per requested partition, named by topicPartition (or, where an answer
        // names none, in the order asked).
        const byIndex = results.length === p.waiters.length;
        p.waiters.forEach((w, i) => {
          const r =
            results.find(
              (x) =>
                x.topicPartition?.topic === w.topic && x.topicPartition?.partition === w.partition,
            ) ?? (byIndex && !results[i]!.topicPartition ? results[i] : undefined);
          w.resolve(
            r
              ? {
                  errorCode: String(r.errorCode ?? "UNKNOWN_SERVER_ERROR"),
                  errorMessage: r.errorMessage ?? "",
                }
              : {
                  errorCode: "UNKNOWN_SERVER_ERROR",
                  errorMessage: "the coordinator's answer left this partition out",
                },
          );
        });
      },
      (e: unknown) => {
        for (const w of p.waiters) w.reject(e);
      },
    );
  }
}

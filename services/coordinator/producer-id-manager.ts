// Hands out producer ids from blocks the controller allocates (Kafka's ProducerIdManager). The
// next block is fetched before the current one runs out, so a new id rarely waits on the
// controller. One fetch at a time; every wait is bounded.
import { assert } from "../../libs/common/assert.js";
import type { SchedulingClock } from "../../libs/runtime/scheduler.js";
import { TernError } from "../../libs/common/errors.js";
import type { Logger } from "../../libs/common/logger.js";

export interface ProducerIdBlock {
  readonly firstProducerId: bigint;
  readonly count: number;
}

export interface ProducerIdManagerOptions {
  readonly nodeId: number;
  /** ControllerClient.allocateProducerIds in production. */
  readonly allocate: (nodeId: number) => Promise<ProducerIdBlock>;
  readonly logger: Logger;
  /** Prefetch the next block when fewer ids than this remain. */
  readonly prefetchBelow?: number;
  /** Bound on how long nextProducerId() waits for a block. */
  readonly waitMs?: number;
  /** Time and timers of that bound (the process runtime's; a ManualClock in tests). */
  readonly clock: SchedulingClock;
}

export class ProducerIdManager {
  private current: { next: bigint; end: bigint } | undefined;
  private prefetched: ProducerIdBlock | undefined;
  private fetching: Promise<void> | undefined;
  private readonly prefetchBelow: number;
  private readonly waitMs: number;
  private readonly clock: SchedulingClock;

  constructor(private readonly options: ProducerIdManagerOptions) {
    this.clock = options.clock;
    this.prefetchBelow = options.prefetchBelow ?? 100;
    this.waitMs = options.waitMs ?? 5_000;
    assert(this.prefetchBelow >= 0 && this.waitMs > 0, "producer id manager limits are positive");
  }

  async nextProducerId(): Promise<bigint> {
    const deadline = this.clock.monotonicMs() + this.waitMs;
    // Bounded: each round either takes an id or waits for one fetch.
    for (let round = 0; round < 8; round++) {
      const id = this.take();
      if (id !== undefined) return id;
      const remainingMs = deadline - this.clock.monotonicMs();
      if (remainingMs <= 0) break;
      await withTimeout(this.clock, this.fetch(), remainingMs).catch((e: unknown) => {
        this.options.logger.warn({ err: e }, "producer id block allocation failed");
      });
    }
    throw new TernError(
      "COORDINATOR_NOT_AVAILABLE",
      "no producer id block available from the controller",
    );
  }

  /** Ids left before a fetch is needed (for tests and metrics). */
  remaining(): bigint {
    const inCurrent = this.current === undefined ? 0n : this.current.end - this.current.next;
    return inCurrent + BigInt(this.prefetched?.count ?? 0);
  }

  private take(): bigint | undefined {
    if (
      (this.current === undefined || this.current.next >= this.current.end) &&
      this.prefetched !== undefined
    ) {
      this.current = {
        next: this.prefetched.firstProducerId,
        end: this.prefetched.firstProducerId + BigInt(this.prefetched.count),
      };
      this.prefetched = undefined;
    }
    if (this.current === undefined || this.current.next >= this.current.end) return undefined;
    const id = this.current.next;
    this.current.next++;
    if (
      this.prefetched === undefined &&
      this.current.end - this.current.next < BigInt(this.prefetchBelow)
    ) {
      void this.fetch().catch((e: unknown) =>
        this.options.logger.warn({ err: e }, "producer id block prefetch failed"),
      );
    }
    return id;
  }

  private fetch(): Promise<void> {
    if (this.prefetched !== undefined) return Promise.resolve();
    this.fetching ??= this.options.allocate(this.options.nodeId).then(
      (block) => {
        assert(
          block.count > 0 && block.firstProducerId >= 0n,
          "a producer id block is non-empty and non-negative",
        );
        this.prefetched = block;
        this.fetching = undefined;
        this.options.logger.info(
          { firstProducerId: block.firstProducerId.toString(), count: block.count },
          "producer id block allocated",
        );
      },
      (e: unknown) => {
        this.fetching = undefined;
        throw e;
      },
    );
    return this.fetching;
  }
}

function withTimeout<T>(clock: SchedulingClock, p: Promise<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = clock.setTimeout(
      () => reject(new TernError("REQUEST_TIMED_OUT", "producer id allocation timed out")),
      ms,
    );
    p.then(
      (v) => {
        clock.clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clock.clearTimeout(timer);
        reject(e);
      },
    );
  });
}

// The producer's bounded buffer (Kafka's buffer.memory): bytes of records accepted by send()
// and not yet acknowledged or failed. reserve() waits, first come first served, until enough
// is released or its deadline passes (then TimeoutError). Waiters are bounded.
import { assert } from "../../common/assert.js";
import { TimeoutError } from "../errors.js";

export const WAITERS_MAX = 100_000;

interface Waiter {
  readonly bytes: number;
  readonly resolve: () => void;
  readonly reject: (e: Error) => void;
  timer: NodeJS.Timeout | undefined;
}

export class BufferMemory {
  private usedBytes = 0;
  private readonly waiters: Waiter[] = [];

  constructor(readonly bytesMax: number) {
    assert(Number.isInteger(bytesMax) && bytesMax > 0, "bufferMemory must be a positive integer");
  }

  get used(): number {
    return this.usedBytes;
  }

  get waiting(): number {
    return this.waiters.length;
  }

  /** Takes bytes at once when free and nobody is queued ahead; false otherwise. */
  tryReserve(bytes: number): boolean {
    if (this.waiters.length > 0 || this.usedBytes + bytes > this.bytesMax) return false;
    this.usedBytes += bytes;
    return true;
  }

  reserve(bytes: number, timeoutMs: number): Promise<void> {
    if (bytes > this.bytesMax)
      return Promise.reject(
        new TimeoutError(
          `a record of ${bytes} bytes can never fit in bufferMemory ${this.bytesMax}`,
        ),
      );
    if (this.tryReserve(bytes)) return Promise.resolve();
    if (this.waiters.length >= WAITERS_MAX)
      return Promise.reject(
        new TimeoutError(`more than ${WAITERS_MAX} sends are waiting for buffer memory`),
      );
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { bytes, resolve, reject, timer: undefined };
      waiter.timer = setTimeout(
        () => {
          const i = this.waiters.indexOf(waiter);
          if (i >= 0) this.waiters.splice(i, 1);
          reject(
            new TimeoutError(
              `send blocked for maxBlockMs=${timeoutMs} ms: bufferMemory ${this.bytesMax} bytes is full (${this.usedBytes} used)`,
            ),
          );
          this.grant();
        },
        Math.max(0, timeoutMs),
      );
      this.waiters.push(waiter);
    });
  }

  release(bytes: number): void {
    assert(
      bytes >= 0 && bytes <= this.usedBytes,
      `release of ${bytes} bytes with ${this.usedBytes} used`,
    );
    this.usedBytes -= bytes;
    this.grant();
  }

  /**
   * Counts toBytes instead of fromBytes for something already taken (a batch once built: its
   * size replaces its records' estimate). Never waits: a batch built larger than its estimate
   * (a few bytes of framing) may take used past bytesMax until it is released.
   */
  resize(fromBytes: number, toBytes: number): void {
    assert(
      fromBytes >= 0 && fromBytes <= this.usedBytes && toBytes >= 0,
      `resize of ${fromBytes} to ${toBytes} bytes with ${this.usedBytes} used`,
    );
    this.usedBytes += toBytes - fromBytes;
    if (toBytes < fromBytes) this.grant();
  }

  /** Rejects every waiter (producer closing). */
  failWaiters(error: Error): void {
    for (const w of this.waiters.splice(0)) {
      clearTimeout(w.timer);
      w.reject(error);
    }
  }

  private grant(): void {
    while (this.waiters.length > 0 && this.usedBytes + this.waiters[0]!.bytes <= this.bytesMax) {
      const w = this.waiters.shift()!;
      clearTimeout(w.timer);
      this.usedBytes += w.bytes;
      w.resolve();
    }
  }
}

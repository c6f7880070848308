// Bytes of inflated Produce records held at once, as a FIFO semaphore of bytes. A request
// reserves the bound of what its compressed batches may inflate to before any inflates (the
// whole reservation at once, so two requests never wait on each other's halves), keeps only what
// they did inflate to once decoded, and releases it when answered. A reservation larger than the
// whole budget takes the whole budget: it runs alone.
export interface InflationHold {
  /** Keeps only `bytes` of the reservation (what the batches did inflate to). */
  shrinkTo(bytes: number): void;
  /** Gives the rest back; later calls do nothing. */
  release(): void;
}

const NO_HOLD: InflationHold = { shrinkTo: () => undefined, release: () => undefined };

export class InflationBudget {
  private used = 0;
  private readonly waiting: Array<{ bytes: number; grant: () => void }> = [];

  constructor(readonly bytesMax: number) {}

  /** Bytes held now (for tests and metrics). */
  held(): number {
    return this.used;
  }

  /** Resolves once `bytes` (at most the whole budget) are reserved, after every earlier waiter. */
  async acquire(bytes: number): Promise<InflationHold> {
    if (bytes <= 0) return NO_HOLD;
    const want = Math.min(bytes, this.bytesMax);
    if (this.waiting.length === 0 && this.used + want <= this.bytesMax) this.used += want;
    // give() reserves a waiter's bytes before granting it.
    else await new Promise<void>((grant) => this.waiting.push({ bytes: want, grant }));
    let holding = want;
    return {
      shrinkTo: (keep) => {
        const next = Math.max(0, Math.min(holding, keep));
        this.give(holding - next);
        holding = next;
      },
      release: () => {
        this.give(holding);
        holding = 0;
      },
    };
  }

  private give(bytes: number): void {
    if (bytes <= 0) return;
    this.used -= bytes;
    // Grant in order while the next one fits.
    let free = this.bytesMax - this.used;
    while (this.waiting.length > 0 && this.waiting[0]!.bytes <= free) {
      const next = this.waiting.shift()!;
      free -= next.bytes;
      this.used += next.bytes;
      next.grant();
    }
  }
}

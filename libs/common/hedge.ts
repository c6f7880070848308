// A request to a node that stops answering without refusing (SIGSTOP, a network partition:
// packets dropped, no reset) fails only at its deadline, seconds after another node has taken
// over. A hedged request asks, every delayMs while it is silent, where it should go now
// (`relocate`: FindCoordinator, the silent node asked last), and when the answer names a node
// not tried yet the request goes there too. The first attempt to settle wins and the others'
// answers are dropped but their requests may still be applied, so only requests whose copies
// are harmless may be hedged: idempotent, or recognised or refused as duplicates (a node that
// no longer leads refuses, but a copy can reach the next leader; hedgeable-txn-calls.ts).
import type { Scheduler, TimerHandle } from "../runtime/scheduler.js";
import { applicationClock } from "../runtime/system-clock.js";

export type HedgedOutcome<T> =
  | { readonly address: string; readonly ok: true; readonly value: T }
  | { readonly address: string; readonly ok: false; readonly error: unknown };

export interface HedgeOptions<T> {
  /** Where the request goes first. */
  readonly address: string;
  readonly send: (address: string) => Promise<T>;
  /** Where the request should go now (undefined: unknown); `silent` is the first address. */
  readonly relocate: (silent: string) => Promise<string | undefined>;
  /** How long every attempt may stay silent before the next relocate. */
  readonly delayMs: number;
  /** Bound on relocates per request. */
  readonly relocatesMax: number;
  /** The hedge timer: a service passes its runtime's; the SDK and tools the application's clock. */
  readonly scheduler?: Scheduler;
}

/** Sends to options.address, hedged as above; resolves with the first attempt to settle. */
export function hedged<T>(options: HedgeOptions<T>): Promise<HedgedOutcome<T>> {
  return new Promise((resolve) => {
    const tried = new Set<string>();
    let done = false;
    let relocates = 0;
    let timer: TimerHandle | undefined;
    const scheduler = options.scheduler ?? applicationClock;
    const finish = (outcome: HedgedOutcome<T>): void => {
      if (done) return;
      done = true;
      scheduler.clearTimeout(timer);
      resolve(outcome);
    };
    const attempt = (address: string): void => {
      tried.add(address);
      options.send(address).then(
        (value) => finish({ address, ok: true, value }),
        (error: unknown) => finish({ address, ok: false, error }),
      );
    };
    const arm = (): void => {
      if (!done && relocates < options.relocatesMax)
        timer = scheduler.setTimeout(relocate, options.delayMs);
    };
    const relocate = (): void => {
      relocates += 1;
      options.relocate(options.address).then(
        (other) => {
          if (done) return;
          if (other !== undefined && !tried.has(other)) attempt(other);
          arm();
        },
        () => arm(),
      );
    };
    attempt(options.address);
    arm();
  });
}

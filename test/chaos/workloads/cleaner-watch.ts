// Whether the brokers' log cleaners really cleaned during a run: their counters
// (tern_log_cleaner_cleans_total, _bytes_read_total, _bytes_written_total) scraped every
// second. A SIGKILLed broker starts again from zero, so a counter that went down marks a new
// incarnation: what the last one had counted is kept and the new one's added to it (what an
// incarnation counted after its last scrape is missed: the totals are a lower bound).
import type { CleanerTotals } from "../checker/compaction-checker.js";
import { sleep } from "./cluster-clients.js";

const SCRAPE_TIMEOUT_MS = 2_000;
const INTERVAL_MS = 1_000;
const COUNTERS = {
  cleans: "tern_log_cleaner_cleans_total",
  bytesRead: "tern_log_cleaner_bytes_read_total",
  bytesWritten: "tern_log_cleaner_bytes_written_total",
} as const;
type Counters = { -readonly [K in keyof CleanerTotals]: number };

const zero = (): Counters => ({ cleans: 0, bytesRead: 0, bytesWritten: 0 });

/** The cleaner counters of one broker (undefined when the scrape fails: the broker is down). */
export async function cleanerCounters(metricsAddress: string): Promise<Counters | undefined> {
  try {
    const res = await fetch(`http://${metricsAddress}/metrics`, {
      signal: AbortSignal.timeout(SCRAPE_TIMEOUT_MS),
    });
    const text = await res.text();
    const out = zero();
    for (const [field, name] of Object.entries(COUNTERS) as Array<[keyof Counters, string]>) {
      const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, "m").exec(text);
      out[field] = m ? Number(m[1]) : 0;
    }
    return out;
  } catch {
    return undefined;
  }
}

export class CleanerWatch {
  /** Per broker: what its earlier incarnations counted, and the last scrape of the current one. */
  private readonly brokers = new Map<string, { earlier: Counters; last: Counters }>();
  private stopped = false;
  private loop: Promise<void> | undefined;

  constructor(private readonly metricsAddresses: () => readonly string[]) {}

  start(): void {
    this.loop = (async () => {
      while (!this.stopped) {
        await this.sample();
        await sleep(INTERVAL_MS);
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
    await this.sample();
  }

  async sample(): Promise<void> {
    await Promise.all(
      this.metricsAddresses().map(async (address) => {
        const now = await cleanerCounters(address);
        if (now === undefined) return;
        const b = this.brokers.get(address) ?? { earlier: zero(), last: zero() };
        const restarted = (Object.keys(COUNTERS) as Array<keyof Counters>).some(
          (k) => now[k] < b.last[k],
        );
        if (restarted)
          for (const k of Object.keys(COUNTERS) as Array<keyof Counters>) b.earlier[k] += b.last[k];
        b.last = now;
        this.brokers.set(address, b);
      }),
    );
  }

  totals(): CleanerTotals {
    const out = zero();
    for (const b of this.brokers.values())
      for (const k of Object.keys(COUNTERS) as Array<keyof Counters>)
        out[k] += b.earlier[k] + b.last[k];
    return out;
  }

  /** Samples until some clean completed (bounded); the totals then. */
  async waitForClean(timeoutMs: number): Promise<CleanerTotals> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      await this.sample();
      const t = this.totals();
      if ((t.cleans > 0 && t.bytesRead > 0) || Date.now() >= deadline) return t;
      await sleep(INTERVAL_MS);
    }
  }
}

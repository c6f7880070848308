// Send-to-acknowledgement latencies of `tern produce --generate`, summarised at the end as
// kafka-producer-perf-test does: records/s, MB/s, average, p50, p95, p99, p99.9 and max.
// Bounded memory: a reservoir of at most SAMPLES_MAX latencies (uniform over the run).

const SAMPLES_MAX = 100_000;

export interface LatencySummary {
  readonly records: number;
  readonly elapsedS: number;
  readonly recordsPerS: number;
  readonly mbPerS: number;
  readonly latencyAvgMs: number;
  readonly latencyP50Ms: number;
  readonly latencyP95Ms: number;
  readonly latencyP99Ms: number;
  readonly latencyP999Ms: number;
  readonly latencyMaxMs: number;
}

export class LatencyRecorder {
  private readonly samples: number[] = [];
  private seen = 0;
  private sumMs = 0;
  private maxMs = 0;
  private bytes = 0;
  /** Deterministic reservoir replacement (a xorshift stream): no Math.random in results. */
  private state = 0x9e3779b9;

  record(latencyMs: number, bytes: number): void {
    this.seen += 1;
    this.sumMs += latencyMs;
    this.bytes += bytes;
    if (latencyMs > this.maxMs) this.maxMs = latencyMs;
    if (this.samples.length < SAMPLES_MAX) {
      this.samples.push(latencyMs);
      return;
    }
    const slot = this.next() % this.seen;
    if (slot < SAMPLES_MAX) this.samples[slot] = latencyMs;
  }

  summary(elapsedMs: number): LatencySummary {
    const sorted = [...this.samples].sort((a, b) => a - b);
    const q = (p: number): number =>
      sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
    const elapsedS = Math.max(elapsedMs, 1) / 1000;
    const round = (x: number): number => Math.round(x * 100) / 100;
    return {
      records: this.seen,
      elapsedS: round(elapsedS),
      recordsPerS: round(this.seen / elapsedS),
      mbPerS: round(this.bytes / 1_048_576 / elapsedS),
      latencyAvgMs: round(this.seen === 0 ? 0 : this.sumMs / this.seen),
      latencyP50Ms: round(q(0.5)),
      latencyP95Ms: round(q(0.95)),
      latencyP99Ms: round(q(0.99)),
      latencyP999Ms: round(q(0.999)),
      latencyMaxMs: round(this.maxMs),
    };
  }

  private next(): number {
    let x = this.state;
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    this.state = x;
    return x;
  }
}

/** kafka-producer-perf-test's closing line. */
export function formatSummary(s: LatencySummary): string {
  return `${s.records} records sent, ${s.recordsPerS} records/sec (${s.mbPerS} MB/sec), ${s.latencyAvgMs} ms avg latency, ${s.latencyMaxMs} ms max latency, ${s.latencyP50Ms} ms 50th, ${s.latencyP95Ms} ms 95th, ${s.latencyP99Ms} ms 99th, ${s.latencyP999Ms} ms 99.9th.`;
}

// The storage benchmark's schedule, scaled to --gb: where the RSS points fall (0, ¼, ½ and all
// of the total retained), when a broker is stopped and restarted, and the case labels. Pure.

export const RECORD_BYTES = 1024;
/** Decimal, like the MB of every throughput figure. */
export const BYTES_PER_GB = 1e9;

export interface RssPoint {
  /** "retained-1gb" at --gb 4. */
  readonly label: string;
  readonly records: number;
}

export interface StoragePlan {
  readonly totalRecords: number;
  /** Ascending; the first is 0 (before any write), the last is totalRecords. */
  readonly rssPoints: readonly RssPoint[];
  /** Acknowledged records at which one broker is SIGKILLed (right after the ½ point). */
  readonly stopAtRecords: number;
  /** ... and at which it is started again; the writes pause until it has caught up. */
  readonly restartAtRecords: number;
}

/** Short decimal for labels: 4 → "4", 0.0125 → "0.0125", 1/3 → "0.333". */
export function gbLabel(gb: number): string {
  return String(Number(gb.toPrecision(3)));
}

export function storagePlan(gb: number): StoragePlan {
  if (!Number.isFinite(gb) || gb <= 0)
    throw new RangeError(`--gb must be a positive number, got ${gb}`);
  const totalRecords = Math.max(8, Math.round((gb * BYTES_PER_GB) / RECORD_BYTES));
  const at = (fraction: number): number => Math.round(totalRecords * fraction);
  const rssPoints = [0, 0.25, 0.5, 1].map((f) => ({
    label: `retained-${gbLabel(gb * f)}gb`,
    records: at(f),
  }));
  // Down for an eighth of the total (0.5 GB of 4): enough to time the catch-up, not so long
  // that two replicas carry the writes for most of the run.
  return { totalRecords, rssPoints, stopAtRecords: at(0.5), restartAtRecords: at(0.625) };
}

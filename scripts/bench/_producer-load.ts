// The libs/client Producer at full speed, shared by the produce and kafka benchmarks: sends
// round-robin over explicit partitions (acks=all, idempotent), bounded ahead of
// acknowledgements by a window (buffer memory bounds it as well), for durationS seconds.
// Latency is send() to acknowledgement per record.
import { percentile } from "./_txn-figures.js";

/** Sends outstanding at most (beyond that the loop waits for acknowledgements). */
const PRODUCER_WINDOW_RECORDS_MAX = 20_000;

/** Records sent and not yet acknowledged at most: two full rounds of batches in flight. */
export function producerWindowRecords(
  partitions: number,
  inflight: number,
  batchRecords: number,
): number {
  return Math.min(PRODUCER_WINDOW_RECORDS_MAX, partitions * inflight * batchRecords * 2);
}

export interface ProducerLoadOptions {
  readonly bootstrap: string;
  readonly topic: string;
  readonly partitions: number;
  readonly durationS: number;
  readonly recordBytes: number;
  /** Records per batch: batchSize is this many records. */
  readonly batchRecords: number;
  /** Batches in flight per partition (at most 5). */
  readonly inflight: number;
  readonly lingerMs: number;
  /** Sends outstanding at most; default producerWindowRecords(partitions, inflight, batchRecords). */
  readonly windowRecords?: number;
}

export interface ProducerLoadResult {
  readonly produced: number;
  readonly failed: number;
  readonly produceS: number;
  readonly p50: number;
  readonly p99: number;
}

export async function producerLoad(o: ProducerLoadOptions): Promise<ProducerLoadResult> {
  const { Producer } = await import("../../libs/client/index.js");
  const producer = new Producer({
    bootstrap: o.bootstrap,
    acks: -1,
    batchSize: o.batchRecords * (o.recordBytes + 64),
    lingerMs: o.lingerMs,
    maxInFlightPerPartition: Math.min(5, o.inflight),
  });
  const value = Buffer.alloc(o.recordBytes, 120);
  await producer.send({ topic: o.topic, partition: 0, value });
  const latenciesMs: number[] = [];
  let produced = 0;
  let failed = 0;
  let outstanding = 0;
  let wake: (() => void) | undefined;
  const window = o.windowRecords ?? producerWindowRecords(o.partitions, o.inflight, o.batchRecords);
  const startMs = performance.now();
  const endMs = startMs + o.durationS * 1000;
  for (let i = 0; performance.now() < endMs; i++) {
    if (outstanding >= window) await new Promise<void>((r) => (wake = r));
    outstanding += 1;
    const t0 = performance.now();
    producer
      .send({ topic: o.topic, partition: i % o.partitions, value })
      .then(
        () => {
          produced += 1;
          latenciesMs.push(performance.now() - t0);
        },
        () => (failed += 1),
      )
      .finally(() => {
        outstanding -= 1;
        const w = wake;
        wake = undefined;
        w?.();
      });
  }
  await producer.flush();
  const produceS = (performance.now() - startMs) / 1000;
  await producer.close();
  latenciesMs.sort((a, b) => a - b);
  return {
    produced,
    failed,
    produceS,
    p50: percentile(latenciesMs, 50),
    p99: percentile(latenciesMs, 99),
  };
}

// Reads a compacted partition under read_committed with its keys and null values (tombstones):
// batches come as the broker stores them (Kafka record batches v2, decode_records false), read
// here, so that a null value stays apart from an empty one. Offsets have gaps where the cleaner
// removed records; each fetch continues at the broker's next fetch offset.
import { TernError, type ErrorName } from "../../../libs/common/errors.js";
import { readBatch } from "../../../libs/records/batch-reader.js";
import type { KvRecord } from "../checker/compaction-checker.js";
import { pollUntil, sleep, type ClusterClients } from "./cluster-clients.js";

const FETCH_DEADLINE_MS = 10_000;
const FETCH_PAGES_MAX = 10_000;
const PARTITION_MAX_BYTES = 1024 * 1024;
const POLL_INTERVAL_MS = 250;

interface Page {
  readonly records: KvRecord[];
  readonly highWatermark: number;
  readonly lastStableOffset: number;
  readonly nextOffset: number;
}

async function fetchPage(
  clients: ClusterClients,
  topic: string,
  partition: number,
  offset: number,
): Promise<Page> {
  const leader = await clients.leader(topic, partition);
  if (!leader)
    throw new TernError("LEADER_NOT_AVAILABLE", `${topic}/${partition} has no live leader`);
  const r = await clients.broker(leader.address).fetch(
    {
      maxWaitMs: 0,
      isolationLevel: "READ_COMMITTED",
      decodeRecords: false,
      partitions: [
        { topic, partition, fetchOffset: String(offset), partitionMaxBytes: PARTITION_MAX_BYTES },
      ],
    },
    FETCH_DEADLINE_MS,
  );
  const p = r.partitions[0];
  if (p.errorCode !== "NONE") {
    clients.invalidate();
    throw new TernError(p.errorCode as ErrorName, p.errorMessage);
  }
  const records: KvRecord[] = [];
  for (const b of p.batches ?? []) {
    if (!b.kafkaBatch || b.kafkaBatch.length === 0) continue;
    const batch = await readBatch(Buffer.from(b.kafkaBatch), (o, _ts, key, value) => ({
      partition,
      offset: Number(o),
      key: key === null ? null : key.toString(),
      value: value === null ? null : value.toString(),
    }));
    if (batch.header.isControl) continue;
    records.push(...batch.records.filter((x) => x.offset >= offset));
  }
  const last = records.length > 0 ? records[records.length - 1]!.offset + 1 : offset;
  return {
    records,
    highWatermark: Number(p.highWatermark),
    lastStableOffset: Number(p.lastStableOffset),
    nextOffset: Math.max(last, Number(p.nextFetchOffset ?? 0)),
  };
}

/** One pass from offset 0 up to the LSO as it is now (reads during the run; throws on errors). */
export async function readCommittedOnce(
  clients: ClusterClients,
  topic: string,
  partition: number,
): Promise<KvRecord[]> {
  const out: KvRecord[] = [];
  let offset = 0;
  for (let page = 0; page < FETCH_PAGES_MAX; page++) {
    const f = await fetchPage(clients, topic, partition, offset);
    out.push(...f.records);
    if (f.nextOffset <= offset || f.nextOffset >= f.lastStableOffset) return out;
    offset = f.nextOffset;
  }
  throw new Error(`${topic}/${partition}: more than ${FETCH_PAGES_MAX} fetch pages`);
}

/** The whole read_committed content of a partition from offset 0, once no transaction is open on it. */
export function readStableKeyed(
  clients: ClusterClients,
  topic: string,
  partition: number,
  deadlineMs: number,
): Promise<KvRecord[] | undefined> {
  return pollUntil(Math.max(1, deadlineMs - Date.now()), POLL_INTERVAL_MS, async () => {
    const out: KvRecord[] = [];
    let offset = 0;
    for (let page = 0; page < FETCH_PAGES_MAX; page++) {
      const f = await fetchPage(clients, topic, partition, offset);
      if (f.lastStableOffset !== f.highWatermark) {
        await sleep(POLL_INTERVAL_MS);
        return undefined; // still an open transaction: wait for its markers
      }
      out.push(...f.records);
      if (f.nextOffset <= offset || f.nextOffset >= f.highWatermark) return out;
      offset = f.nextOffset;
    }
    throw new Error(`${topic}/${partition}: more than ${FETCH_PAGES_MAX} fetch pages`);
  });
}

// Settling unknown outcomes after the faults healed: every transactional id is fenced with a
// fresh InitProducerId (the coordinator rolls a PrepareCommit forward and aborts anything
// else), then each key is read read_committed from offset 0 once no transaction is open on it
// (LSO == high watermark). Everything is bounded by the caller's deadline.
import type { ClusterClients } from "./cluster-clients.js";
import { pollUntil, sleep } from "./cluster-clients.js";
import { TxnSession } from "./txn-session.js";

const FETCH_PAGES_MAX = 10_000;
const POLL_INTERVAL_MS = 250;

export interface SettleResult {
  readonly fenced: string[];
  readonly notFenced: string[];
  readonly finalReads: Record<string, Array<readonly [number, string]>>;
  /** Keys that never became stable (a transaction still open) or could not be read. */
  readonly unreadable: string[];
}

export async function fenceAll(
  clients: ClusterClients,
  transactionalIds: readonly string[],
  deadlineMs: number,
): Promise<{ fenced: string[]; notFenced: string[] }> {
  const fenced: string[] = [];
  const notFenced: string[] = [];
  await Promise.all(
    transactionalIds.map(async (tid) => {
      const ok = await pollUntil(
        Math.max(1, deadlineMs - Date.now()),
        POLL_INTERVAL_MS,
        async () => {
          await new TxnSession(
            clients,
            tid,
            Math.min(20_000, Math.max(1, deadlineMs - Date.now())),
          ).init();
          return true;
        },
      );
      (ok ? fenced : notFenced).push(tid);
    }),
  );
  return { fenced, notFenced };
}

/** The whole read_committed content of one partition, once it is stable. */
export async function readStable(
  clients: ClusterClients,
  topic: string,
  partition: number,
  deadlineMs: number,
): Promise<Array<readonly [number, string]> | undefined> {
  return pollUntil(Math.max(1, deadlineMs - Date.now()), POLL_INTERVAL_MS, async () => {
    const out: Array<readonly [number, string]> = [];
    let offset = 0;
    for (let page = 0; page < FETCH_PAGES_MAX; page++) {
      const f = await clients.fetchCommitted(topic, partition, offset);
      if (f.lastStableOffset !== f.highWatermark) {
        await sleep(POLL_INTERVAL_MS);
        return undefined; // still an open transaction: wait for its markers
      }
      out.push(...f.records.filter(([o]) => o >= offset));
      if (f.nextOffset <= offset || f.nextOffset >= f.highWatermark) return out;
      offset = f.nextOffset;
    }
    throw new Error(`${topic}/${partition}: more than ${FETCH_PAGES_MAX} fetch pages`);
  });
}

export async function settle(
  clients: ClusterClients,
  transactionalIds: readonly string[],
  keys: ReadonlyArray<{ topic: string; partition: number }>,
  timeoutMs: number,
): Promise<SettleResult> {
  const deadlineMs = Date.now() + timeoutMs;
  const { fenced, notFenced } = await fenceAll(clients, transactionalIds, deadlineMs);
  const finalReads: Record<string, Array<readonly [number, string]>> = {};
  const unreadable: string[] = [];
  for (const k of keys) {
    const pairs = await readStable(clients, k.topic, k.partition, deadlineMs);
    if (pairs === undefined) unreadable.push(`${k.topic}/${k.partition}`);
    else finalReads[`${k.topic}/${k.partition}`] = pairs;
  }
  return { fenced, notFenced, finalReads, unreadable };
}

// The exactly-once check: the output topic read read_committed holds transform(input) for
// every input record exactly once, and the group's committed offsets equal the input end offsets.
import { Consumer, type ClientTlsFiles, type ConsumerRecord } from "../../libs/client/index.js";
import { transform } from "./transform.js";

export interface VerifyResult {
  ok: boolean;
  inputRecords: number;
  outputRecords: number;
  missing: number;
  duplicates: number;
  unexpected: number;
  offsetsMatch: boolean;
  inputEndOffsets: Record<number, string>;
  committedOffsets: Record<number, string | null>;
}

export async function readToEnd(
  bootstrap: string,
  topic: string,
  partitions: number,
  isolationLevel: "read_committed" | "read_uncommitted",
  timeoutMs = 120_000,
  tls?: ClientTlsFiles,
): Promise<ConsumerRecord[]> {
  const consumer = new Consumer({ bootstrap, isolationLevel, ...(tls ? { tls } : {}) });
  try {
    const tps = Array.from({ length: partitions }, (_, partition) => ({ topic, partition }));
    consumer.assign(tps);
    await consumer.seekToBeginning();
    const ends = await consumer.endOffsets(tps);
    const out: ConsumerRecord[] = [];
    const deadline = Date.now() + timeoutMs;
    const done = async (): Promise<boolean> => {
      for (const e of ends) if ((await consumer.position(e)) < e.offset) return false;
      return true;
    };
    while (!(await done())) {
      if (Date.now() > deadline)
        throw new Error(`reading ${topic} to its end took longer than ${timeoutMs} ms`);
      out.push(...(await consumer.poll({ maxPollRecords: 5_000, timeoutMs: 500 })));
    }
    return out;
  } finally {
    await consumer.close();
  }
}

export async function verifyExactlyOnce(args: {
  bootstrap: string;
  tls?: ClientTlsFiles | undefined;
  input: string;
  output: string;
  groupId: string;
  partitions: number;
}): Promise<VerifyResult> {
  const read = (topic: string): Promise<ConsumerRecord[]> =>
    readToEnd(args.bootstrap, topic, args.partitions, "read_committed", undefined, args.tls);
  const input = await read(args.input);
  const output = await read(args.output);
  const expected = new Map<string, number>();
  for (const r of input) {
    const k = `${r.partition}\u0000${transform(r.value?.toString() ?? "")}`;
    expected.set(k, (expected.get(k) ?? 0) + 1);
  }
  const seen = new Map<string, number>();
  for (const r of output) {
    const k = `${r.partition}\u0000${r.value?.toString() ?? ""}`;
    seen.set(k, (seen.get(k) ?? 0) + 1);
  }
  let missing = 0;
  let duplicates = 0;
  let unexpected = 0;
  for (const [k, n] of expected) {
    const got = seen.get(k) ?? 0;
    if (got < n) missing += n - got;
    if (got > n) duplicates += got - n;
  }
  for (const [k, n] of seen) if (!expected.has(k)) unexpected += n;
  const group = new Consumer({
    bootstrap: args.bootstrap,
    ...(args.tls ? { tls: args.tls } : {}),
    groupId: args.groupId,
    isolationLevel: "read_committed",
  });
  const tps = Array.from({ length: args.partitions }, (_, partition) => ({
    topic: args.input,
    partition,
  }));
  try {
    const committed = await group.committed(tps);
    const ends = await group.endOffsets(tps);
    const inputEndOffsets = Object.fromEntries(ends.map((e) => [e.partition, String(e.offset)]));
    const committedOffsets = Object.fromEntries(
      committed.map((c) => [c.partition, c.offset === null ? null : String(c.offset)]),
    );
    const offsetsMatch = ends.every((e) => committedOffsets[e.partition] === String(e.offset));
    return {
      ok: missing === 0 && duplicates === 0 && unexpected === 0 && offsetsMatch,
      inputRecords: input.length,
      outputRecords: output.length,
      missing,
      duplicates,
      unexpected,
      offsetsMatch,
      inputEndOffsets,
      committedOffsets,
    };
  } finally {
    await group.close();
  }
}

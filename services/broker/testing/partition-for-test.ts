// A PartitionStateMachine over real segment files in a temporary directory, for tests. The
// directories are removed when the test process exits.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { RecordCache } from "../../../libs/storage/record-cache.js";
import { PartitionStateMachine } from "../partition-state-machine.js";

const dirs: string[] = [];
process.once("exit", () => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

export function tempPartitionDir(): string {
  const d = mkdtempSync(join(tmpdir(), "tern-partition-"));
  dirs.push(d);
  return d;
}

/** A partition replica's state machine on `dir` (a fresh temporary one by default). */
export function partitionForTest(
  topic: string,
  partition: number,
  dir = tempPartitionDir(),
  segmentBytes = 1024 * 1024,
  producersMax?: number,
): PartitionStateMachine {
  return new PartitionStateMachine(topic, partition, {
    dir,
    cache: new RecordCache(8 * 1024 * 1024),
    segmentBytes,
    segmentMs: -1,
    indexIntervalBytes: 4096,
    readAheadBytes: 1024 * 1024,
    initialVoters: [0],
    ...(producersMax === undefined ? {} : { producersMax }),
  });
}

// ReadReplicaRecords (between brokers): a replica's applied records of a partition by Raft
// index, exactly as its segments hold them, for another replica that repairs a damaged segment
// (segment-repair.ts; docs/storage.md, "Corruption and repair"). Any replica may answer, not only
// the leader: applied records are committed, and the same bytes on every replica. Every record
// is checked on the way out of the file, as for any read: damage here fails the call and is
// reported here (a leader steps down), never sent.
import { isTernError, TernError, type ErrorName } from "../../libs/common/errors.js";
import { encodeRecords } from "../../libs/storage/log-record.js";
import type { PartitionDirectory } from "./local-partition.js";
import { errorFields, int32, int64 } from "./wire.js";
import type {
  ReadReplicaRecordsRequest__Output,
  ReadReplicaRecordsResponse__Output,
} from "../../libs/common/proto-types/index.js";

export const REPLICA_RECORDS_BYTES_DEFAULT = 4 * 1024 * 1024;
export const REPLICA_RECORDS_BYTES_MAX = 16 * 1024 * 1024;

export function createReadReplicaRecordsHandler(deps: {
  readonly directory: PartitionDirectory;
}): (request: ReadReplicaRecordsRequest__Output) => Promise<ReadReplicaRecordsResponse__Output> {
  return async (request) => {
    const topic = String(request?.topic ?? "");
    const partition = int32(request?.partition, -1);
    const from = Number(int64(request?.fromIndex, "from_index"));
    const to = Number(int64(request?.toIndex, "to_index"));
    const asked = int32(request?.maxBytes);
    if (from < 1 || to < from)
      throw new TernError("INVALID_REQUEST", `index range [${from}, ${to}] is empty or below 1`);
    const maxBytes = Math.min(
      asked > 0 ? asked : REPLICA_RECORDS_BYTES_DEFAULT,
      REPLICA_RECORDS_BYTES_MAX,
    );
    const local = deps.directory.local(topic, partition);
    const none = { records: Buffer.alloc(0), firstIndex: "0", lastIndex: "0" };
    if (local === undefined)
      return {
        ...errorFields("UNKNOWN_TOPIC_OR_PARTITION", `no replica of ${topic}/${partition} here`),
        ...none,
      };
    try {
      const got = await local.stateMachine.appliedRecords(from, to, maxBytes);
      return {
        ...errorFields("NONE"),
        records: encodeRecords(got.records),
        firstIndex: String(got.firstIndex),
        lastIndex: String(got.lastIndex),
      };
    } catch (e) {
      if (isTernError(e, "OFFSET_OUT_OF_RANGE") || isTernError(e, "CORRUPT_MESSAGE"))
        return { ...errorFields(e.spec.name as ErrorName, e.message), ...none };
      throw e;
    }
  };
}

// TxnOffsetCommit v0-v2 on a broker's listener (the group coordinator FindCoordinator pointed
// to): a transactional producer's offsets for a group, pending until its transaction's marker,
// through the group service's own TxnOffsetCommit (which checks that AddOffsetsToTxn added the
// group and fences older epochs). v0-v2 carry no group generation (KIP-447 came with v3), so
// the commit is checked as a simple group's. A whole-request failure (NOT_COORDINATOR,
// COORDINATOR_LOAD_IN_PROGRESS, fencing, ...) is answered on every partition, as Kafka does.
import { kafkaErrorCode } from "./kafka-errors.js";
import { requireAllowed } from "./kafka-access.js";
import { TernError } from "../../libs/common/errors.js";
import { API } from "./api-versions.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { thrownTxnErrorCode, txnErrorCode } from "./txn-errors.js";

export async function txnOffsetCommitResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const transactionalId = r.string();
  const groupId = r.string();
  const producerId = r.int64();
  const producerEpoch = r.int16();
  const topics = r.array((x) => ({
    name: x.string(),
    partitions: x.array((y) => {
      const partition = y.int32();
      const offset = y.int64();
      const leaderEpoch = version >= 2 ? y.int32() : -1;
      return { partition, offset, leaderEpoch, metadata: y.nullableString() ?? "" };
    }),
  }));
  const wanted = topics.flatMap((t) =>
    t.partitions.map((p) => ({
      topic: t.name,
      partition: p.partition,
      offset: p.offset.toString(),
      leaderEpoch: p.leaderEpoch,
      metadata: p.metadata,
    })),
  );
  const codes = new Map<string, number>();
  try {
    if (deps.txnOffsetCommit === undefined)
      throw new TernError(
        "NOT_COORDINATOR",
        "this node is a transaction coordinator: groups are served by the broker FindCoordinator names",
      );
    // ACLs (Kafka's rule and order): WRITE on the transactional id, READ on the group, READ on
    // every topic; refused topics are answered so, the rest committed.
    requireAllowed(deps.access, "write", "transactional-id", transactionalId);
    requireAllowed(deps.access, "read", "group", groupId);
    const access = deps.access;
    for (const p of wanted)
      if (access !== undefined && !access.allowed("read", "topic", p.topic))
        codes.set(`${p.topic}/${p.partition}`, kafkaErrorCode("TOPIC_AUTHORIZATION_FAILED"));
    const allowed = wanted.filter((p) => !codes.has(`${p.topic}/${p.partition}`));
    const res =
      allowed.length === 0
        ? { partitions: [] }
        : await deps.txnOffsetCommit({
            transactionalId,
            groupId,
            producerId: producerId.toString(),
            producerEpoch,
            generationId: -1,
            memberId: "",
            groupInstanceId: "",
            partitions: allowed,
          });
    for (const x of (res.partitions ?? []) as Array<{
      topic: string;
      partition: number;
      errorCode: string;
    }>) {
      codes.set(
        `${x.topic}/${x.partition}`,
        txnErrorCode(x.errorCode, API.TxnOffsetCommit, version),
      );
    }
  } catch (e) {
    const code = thrownTxnErrorCode(e, API.TxnOffsetCommit, version, deps.logger);
    for (const tp of wanted) codes.set(`${tp.topic}/${tp.partition}`, code);
  }
  const w = new KafkaWriter(64 + wanted.length * 8);
  w.int32(0); // throttle_time_ms
  w.array(topics, (x, t) => {
    x.string(t.name);
    x.array(t.partitions, (y, p) =>
      y.int32(p.partition).int16(codes.get(`${t.name}/${p.partition}`) ?? -1),
    );
  });
  return w.finish();
}

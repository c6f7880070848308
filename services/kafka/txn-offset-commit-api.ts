// TxnOffsetCommit v0-v5 on a broker's listener (the group coordinator FindCoordinator pointed
// to): a transactional producer's offsets for a group, pending until its transaction's marker,
// through the group service's own TxnOffsetCommit (which checks that AddOffsetsToTxn added the
// group and fences older epochs). v4 = v3 (TRANSACTION_ABORTABLE allowed, never answered); v5 is
// transactions V2 (KIP-890 part 2): the client sends no AddOffsetsToTxn, and the group service
// has the transaction coordinator add the group's partition instead of verifying it. v3 (KIP-447) carries the consumer's group generation, member
// id and group instance id: the group service checks them against the group as it checks an
// OffsetCommit's (a classic group: UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID),
// so a zombie copier's offsets are refused; v0-v2 carry none and are checked as a simple
// group's commit. A whole-request failure (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
// fencing, ...) is answered on every partition, as Kafka does. Layouts: txn-offset-commit-codec.ts.
import { kafkaErrorCode } from "./kafka-errors.js";
import { requireAllowed } from "./kafka-access.js";
import { TernError } from "../../libs/common/errors.js";
import { API } from "./api-versions.js";
import type { KafkaDeps } from "./kafka-deps.js";
import type { KafkaReader } from "../../libs/records/kafka-codec.js";
import { thrownTxnErrorCode, txnErrorCode } from "./txn-errors.js";
import {
  decodeTxnOffsetCommitRequest,
  encodeTxnOffsetCommitResponse,
} from "./txn-offset-commit-codec.js";

/** Transactions V2 (KIP-890 part 2): the commit adds the group's partition to the transaction. */
const TXN_OFFSET_COMMIT_ADDS_OFFSETS_SINCE = 5;

export async function txnOffsetCommitResponse(
  deps: KafkaDeps,
  version: number,
  r: KafkaReader,
): Promise<Buffer> {
  const req = decodeTxnOffsetCommitRequest(version, r);
  const { transactionalId, groupId } = req;
  const wanted = req.topics.flatMap((t) =>
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
            producerId: req.producerId.toString(),
            producerEpoch: req.producerEpoch,
            generationId: req.generationId,
            memberId: req.memberId,
            groupInstanceId: req.groupInstanceId ?? "",
            partitions: allowed,
            addOffsetsToTxn: version >= TXN_OFFSET_COMMIT_ADDS_OFFSETS_SINCE,
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
  return encodeTxnOffsetCommitResponse(
    version,
    req.topics,
    (topic, partition) => codes.get(`${topic}/${partition}`) ?? -1,
  );
}

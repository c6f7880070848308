// What the group APIs of the Kafka listener share: the group coordinator of this process (a
// process without one answers NOT_COORDINATOR, so clients look again), and a thrown error as
// a Kafka error code (TernErrors keep their Kafka number; anything else is UNKNOWN_SERVER_ERROR).
import { requireAllowed } from "./kafka-access.js";
import type { Operation } from "../../libs/common/acl.js";
import { isTernError, TernError } from "../../libs/common/errors.js";
import type { GroupCoordinator } from "../group/index.js";
import type { KafkaDeps } from "./kafka-deps.js";
import { kafkaErrorCode } from "./kafka-errors.js";

/** Who sent a request: Kafka's DescribeGroups reports the client id and host of each member. */
export interface KafkaClientInfo {
  readonly clientId: string;
  /** "/" + address, as Kafka's brokers write it. */
  readonly clientHost: string;
}

/** The group coordinator, after the ACL check of `op` on the group when one is named (GROUP_AUTHORIZATION_FAILED). */
export function groupCoordinatorOf(
  deps: KafkaDeps,
  groupId?: string,
  op: Operation = "read",
): GroupCoordinator {
  if (groupId !== undefined) requireAllowed(deps.access, op, "group", groupId);
  if (!deps.groups)
    throw new TernError("NOT_COORDINATOR", `node ${deps.nodeId} runs no group coordinator`);
  return deps.groups;
}

export function errorCodeOf(deps: KafkaDeps, e: unknown, what: string): number {
  if (isTernError(e)) return kafkaErrorCode(e.errorName);
  deps.logger.error({ err: e }, `kafka ${what} failed`);
  return -1;
}

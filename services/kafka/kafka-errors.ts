// tern's error names are Kafka's; their numbers too, below 1000. tern-only codes (1000 and up)
// have no Kafka meaning: a Kafka client sees UNKNOWN_SERVER_ERROR (-1) for those.
import { errorSpec, type ErrorName } from "../../libs/common/errors.js";

export function kafkaErrorCode(name: string | null | undefined): number {
  if (name === null || name === undefined || name === "" || name === "NONE") return 0;
  try {
    const code = errorSpec(name as ErrorName).code;
    return code >= 1000 ? -1 : code;
  } catch {
    return -1;
  }
}

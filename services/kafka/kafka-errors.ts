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

/** Most characters of an error message in an answer (messages may quote request fields). */
export const KAFKA_ERROR_MESSAGE_CHARS_MAX = 256;

/** A refusal's message as Kafka answers carry it: the error's own text when none is given, cut to a bound. */
export function kafkaErrorMessage(name: ErrorName, message: string): string {
  const text = message.length > 0 ? message : errorSpec(name).message;
  return text.length > KAFKA_ERROR_MESSAGE_CHARS_MAX
    ? `${text.slice(0, KAFKA_ERROR_MESSAGE_CHARS_MAX - 3)}...`
    : text;
}

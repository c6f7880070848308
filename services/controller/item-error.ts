// The error of one item in a controller command's result (a topic, an ACL, a SCRAM credential):
// always present, NONE on success, as on the wire.
import type { ErrorName } from "../../libs/common/errors.js";

export interface ItemError {
  readonly error: ErrorName;
  readonly message: string;
}

export const NO_ERROR: ItemError = { error: "NONE", message: "" };

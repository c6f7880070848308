// The controller's AlterClientQuotas / DescribeClientQuotas requests (proto/tern/v1/controller.proto):
// wire entities to the model, one Raft entry per alter request (none for validate_only),
// results in request order. A malformed entity or value fails alone (INVALID_REQUEST), before
// the proposal.
import {
  QUOTA_CHANGES_PER_REQUEST_MAX,
  type QuotaAlteration,
} from "../../libs/common/client-quota.js";
import { TernError } from "../../libs/common/errors.js";
import {
  quotaEntityFromWire,
  quotaEntryToWire,
  quotaFilterFromWire,
} from "../../libs/metadata/quota-wire.js";
import { checkAlteration, describeClientQuotas, type ClientQuotaStore } from "./client-quotas.js";
import type { Command } from "./command-codec.js";
import type { CommandResult } from "./metadata-state-machine.js";
import type {
  AlterClientQuotasRequest__Output,
  AlterClientQuotasResponse,
  DescribeClientQuotasRequest__Output,
  DescribeClientQuotasResponse,
  ItemError,
} from "../../libs/common/proto-types/index.js";

type Propose = (c: Command) => Promise<CommandResult>;
const NONE: ItemError = { code: "NONE", message: "" };

export async function alterClientQuotasRequest(
  req: AlterClientQuotasRequest__Output,
  propose: Propose,
): Promise<AlterClientQuotasResponse> {
  const entries = Array.isArray(req?.entries) ? req.entries : [];
  if (entries.length === 0 || entries.length > QUOTA_CHANGES_PER_REQUEST_MAX)
    throw new TernError(
      "INVALID_REQUEST",
      `AlterClientQuotas needs 1..${QUOTA_CHANGES_PER_REQUEST_MAX} entities, got ${entries.length}`,
    );
  const checked = entries.map((w): QuotaAlteration | ItemError => {
    try {
      const a: QuotaAlteration = {
        entity: quotaEntityFromWire(w?.entity),
        ops: (w?.ops ?? []).map((o) =>
          o?.remove === true
            ? { key: String(o.key), remove: true }
            : { key: String(o?.key), value: Number(o?.value) },
        ),
      };
      const bad = checkAlteration(a);
      return bad ? { code: bad.error, message: bad.message } : a;
    } catch (e) {
      return { code: "INVALID_REQUEST", message: (e as Error).message };
    }
  });
  const valid = checked.filter((a): a is QuotaAlteration => "entity" in a);
  let outcomes: Array<{ error: string; message: string }> = [];
  if (valid.length > 0 && req.validateOnly !== true) {
    const r = await propose({ type: "alterClientQuotas", entries: valid });
    if (r.type !== "alterClientQuotas")
      throw new TernError("UNKNOWN_SERVER_ERROR", `unexpected result ${r.type}`);
    outcomes = [...r.outcomes];
  }
  let next = 0;
  return {
    results: checked.map((a) => {
      if (!("entity" in a)) return a;
      const o = outcomes[next++];
      return o === undefined || o.error === "NONE"
        ? NONE
        : ({ code: o.error, message: o.message } as ItemError);
    }),
  };
}

export function describeClientQuotasRequest(
  req: DescribeClientQuotasRequest__Output,
  store: ClientQuotaStore,
): DescribeClientQuotasResponse {
  const components = (req?.components ?? []).map(quotaFilterFromWire);
  return {
    entries: describeClientQuotas(store, components, req?.strict === true).map(quotaEntryToWire),
  };
}

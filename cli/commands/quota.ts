// tern quota describe|alter|delete: client quotas in Kafka's model (docs/security.md, "Quotas"):
// produce and fetch byte rates and a request-time percentage per user, per client id, or per
// both, each named or the <default> entity. The Kafka listeners of brokers and coordinators
// enforce them; a change reaches them with the next metadata view.
import type { Command } from "commander";
import {
  describeEntity,
  type ClientQuotaEntry,
  type QuotaEntity,
  type QuotaFilterComponent,
  type QuotaKey,
  type QuotaOp,
} from "../../libs/common/client-quota.js";
import { printJson, printTable, UsageError } from "../output.js";
import { globals, withAdmin } from "./context.js";

interface EntityOptions {
  user?: string;
  clientId?: string;
  /** Which of the entity's types are <default>: "user", "client-id" or both (comma-separated). */
  default?: string;
}

interface ValueOptions {
  producerByteRate?: string;
  consumerByteRate?: string;
  requestPercentage?: string;
}

const VALUE_FLAGS: Array<[keyof ValueOptions, QuotaKey, string]> = [
  ["producerByteRate", "producer_byte_rate", "--producer-byte-rate"],
  ["consumerByteRate", "consumer_byte_rate", "--consumer-byte-rate"],
  ["requestPercentage", "request_percentage", "--request-percentage"],
];

function defaultsOf(o: EntityOptions): { user: boolean; clientId: boolean } {
  const types = (o.default ?? "").split(",").filter((t) => t !== "");
  for (const t of types)
    if (t !== "user" && t !== "client-id")
      throw new UsageError(`--default: expected user, client-id or user,client-id; got "${t}"`);
  return { user: types.includes("user"), clientId: types.includes("client-id") };
}

/** The entity the flags name; required for alter and delete. */
function entityOf(o: EntityOptions): QuotaEntity {
  const d = defaultsOf(o);
  if (d.user && o.user !== undefined)
    throw new UsageError("give --user <name> or --default user, not both");
  if (d.clientId && o.clientId !== undefined)
    throw new UsageError("give --client-id <id> or --default client-id, not both");
  const user = d.user ? null : o.user;
  const clientId = d.clientId ? null : o.clientId;
  if (user === undefined && clientId === undefined)
    throw new UsageError("name the entity: --user <name>, --client-id <id>, --default <types>");
  return {
    ...(user !== undefined ? { user } : {}),
    ...(clientId !== undefined ? { clientId } : {}),
  };
}

/** The describe filter: each flag given narrows it; none lists everything. */
function filterOf(o: EntityOptions): QuotaFilterComponent[] {
  const d = defaultsOf(o);
  const out: QuotaFilterComponent[] = [];
  if (d.user) out.push({ entityType: "user", match: "default" });
  else if (o.user !== undefined) out.push({ entityType: "user", match: "exact", name: o.user });
  if (d.clientId) out.push({ entityType: "client-id", match: "default" });
  else if (o.clientId !== undefined)
    out.push({ entityType: "client-id", match: "exact", name: o.clientId });
  return out;
}

function valueOf(flag: string, raw: string): number {
  const n = Number(raw);
  if (raw.trim() === "" || !Number.isFinite(n) || n <= 0)
    throw new UsageError(`${flag}: expected a positive number, got "${raw}"`);
  return n;
}

function addEntityFlags(c: Command): Command {
  return c
    .option("--user <name>", "the user (the SASL or certificate principal's name)")
    .option("--client-id <id>", "the client id the client sends")
    .option(
      "--default <types>",
      "the <default> entity of these types: user, client-id, or user,client-id",
    );
}

function print(json: boolean, entries: readonly ClientQuotaEntry[]): void {
  if (json) return printJson(entries);
  printTable(
    ["ENTITY", "PRODUCER_BYTE_RATE", "CONSUMER_BYTE_RATE", "REQUEST_PERCENTAGE"],
    entries.map((e) => [
      describeEntity(e.entity),
      e.values.producer_byte_rate ?? "-",
      e.values.consumer_byte_rate ?? "-",
      e.values.request_percentage ?? "-",
    ]),
  );
}

export function registerQuota(program: Command): void {
  const quota = program
    .command("quota")
    .description("client quotas (Kafka's): byte rates and request time per user and client id");

  addEntityFlags(
    quota
      .command("describe")
      .description("the quota entities matching the entity flags (all when none)"),
  )
    .option("--strict", "only entities with no entity type besides the flags'")
    .action(async (o: EntityOptions & { strict?: boolean }, cmd: Command) => {
      const g = globals(cmd);
      await withAdmin(g, async (admin) => {
        print(g.json, await admin.describeClientQuotas(filterOf(o), { strict: o.strict === true }));
      });
    });

  addEntityFlags(
    quota.command("alter").description("set quota values of one entity (others stay as they are)"),
  )
    .option("--producer-byte-rate <bytes>", "produce bytes per second (per broker)")
    .option("--consumer-byte-rate <bytes>", "fetch bytes per second (per broker)")
    .option(
      "--request-percentage <percent>",
      "time on each listener's event loop, percent of one second per second",
    )
    .option("--validate-only", "check the change and change nothing")
    .action(async (o: EntityOptions & ValueOptions & { validateOnly?: boolean }, cmd: Command) => {
      const g = globals(cmd);
      const entity = entityOf(o);
      const ops: QuotaOp[] = VALUE_FLAGS.flatMap(([field, key, flag]) =>
        o[field] === undefined ? [] : [{ key, value: valueOf(flag, o[field]) }],
      );
      if (ops.length === 0)
        throw new UsageError(
          "give at least one of --producer-byte-rate, --consumer-byte-rate, --request-percentage",
        );
      await withAdmin(g, async (admin) => {
        await admin.alterClientQuotas([{ entity, ops }], { validateOnly: o.validateOnly === true });
        if (g.json) printJson({ entity, ops });
        else
          process.stdout.write(
            `${o.validateOnly ? "valid" : "altered"}: ${describeEntity(entity)}\n`,
          );
      });
    });

  addEntityFlags(
    quota
      .command("delete")
      .description("remove quota values of one entity (every value when no value flag is given)"),
  )
    .option("--producer-byte-rate", "remove producer_byte_rate")
    .option("--consumer-byte-rate", "remove consumer_byte_rate")
    .option("--request-percentage", "remove request_percentage")
    .action(
      async (
        o: EntityOptions & {
          producerByteRate?: boolean;
          consumerByteRate?: boolean;
          requestPercentage?: boolean;
        },
        cmd: Command,
      ) => {
        const g = globals(cmd);
        const entity = entityOf(o);
        const chosen = VALUE_FLAGS.filter(([field]) => o[field] === true);
        const ops: QuotaOp[] = (chosen.length === 0 ? VALUE_FLAGS : chosen).map(([, key]) => ({
          key,
          remove: true,
        }));
        await withAdmin(g, async (admin) => {
          await admin.alterClientQuotas([{ entity, ops }]);
          if (g.json) printJson({ entity, removed: ops.map((op) => op.key) });
          else process.stdout.write(`deleted: ${describeEntity(entity)}\n`);
        });
      },
    );
}

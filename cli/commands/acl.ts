// tern acl create|list|delete: Kafka-model ACLs in the controller's metadata (docs/security.md,
// "Authorization"). The Kafka listeners of brokers and coordinators started with
// --kafka-authorizer acl, and the gRPC services of processes started with --grpc-authorizer
// acl, enforce them; a change reaches them with the next metadata view.
import type { Command } from "commander";
import type { AclBinding, AclFilter } from "../../libs/client/index.js";
import {
  CLUSTER_RESOURCE_NAME,
  isOperation,
  isPatternType,
  type Operation,
  type ResourceType,
} from "../../libs/common/acl.js";
import { printJson, printTable, UsageError } from "../output.js";
import { globals, withAdmin } from "./context.js";

interface ResourceOptions {
  topic?: string;
  group?: string;
  transactionalId?: string;
  cluster?: boolean;
  prefixed?: boolean;
}

interface AclOptions extends ResourceOptions {
  allow?: string[];
  deny?: string[];
  operation: string[];
}

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

function resourceOf(
  o: ResourceOptions,
  required: boolean,
): { resourceType?: ResourceType; resourceName?: string } {
  const given: Array<[ResourceType, string]> = [];
  if (o.topic !== undefined) given.push(["topic", o.topic]);
  if (o.group !== undefined) given.push(["group", o.group]);
  if (o.transactionalId !== undefined) given.push(["transactional-id", o.transactionalId]);
  if (o.cluster) given.push(["cluster", CLUSTER_RESOURCE_NAME]);
  if (given.length > 1)
    throw new UsageError("give one of --topic, --group, --transactional-id and --cluster");
  if (given.length === 0) {
    if (required)
      throw new UsageError("give one of --topic, --group, --transactional-id and --cluster");
    return {};
  }
  return { resourceType: given[0]![0], resourceName: given[0]![1] };
}

function operationsOf(values: string[]): Operation[] {
  if (values.length === 0)
    throw new UsageError(
      "give at least one --operation (read, write, create, delete, alter, describe, describe-configs, alter-configs, idempotent-write, cluster-action, all)",
    );
  return values.map((v) => {
    const op = v.toLowerCase().replace(/_/g, "-");
    if (!isOperation(op)) throw new UsageError(`--operation: unknown operation "${v}"`);
    return op;
  });
}

const principalArg = (p: string): string => (p.startsWith("User:") ? p : `User:${p}`);

function addResourceFlags(c: Command): Command {
  return c
    .option("--topic <name>", 'a topic ("*": every topic)')
    .option("--group <id>", 'a consumer group ("*": every group)')
    .option("--transactional-id <id>", 'a transactional id ("*": every one)')
    .option("--cluster", "the cluster itself (create topics, idempotent writes, ACL changes)")
    .option("--prefixed", "the name is a prefix (Kafka's PREFIXED pattern)");
}

function print(json: boolean, acls: readonly AclBinding[]): void {
  if (json) printJson(acls);
  else
    printTable(
      ["PRINCIPAL", "PERMISSION", "OPERATION", "RESOURCE", "NAME", "PATTERN"],
      acls.map((b) => [
        b.principal,
        b.permission,
        b.operation,
        b.resourceType,
        b.resourceName,
        b.patternType,
      ]),
    );
}

export function registerAcl(program: Command): void {
  const acl = program
    .command("acl")
    .description(
      "ACLs the Kafka listeners (--kafka-authorizer acl) and gRPC services (--grpc-authorizer acl) enforce",
    );

  addResourceFlags(
    acl.command("create").description("allow or deny principals operations on a resource"),
  )
    .option("--allow <principal>", "User:<name> or User:* (repeatable)", collect)
    .option("--deny <principal>", "User:<name> or User:* (repeatable)", collect)
    .option("--operation <op>", "read, write, describe, ... (repeatable)", collect, [])
    .action(async (o: AclOptions, cmd: Command) => {
      const g = globals(cmd);
      const { resourceType, resourceName } = resourceOf(o, true);
      const principals = [
        ...(o.allow ?? []).map((p) => ["allow", p] as const),
        ...(o.deny ?? []).map((p) => ["deny", p] as const),
      ];
      if (principals.length === 0) throw new UsageError("give --allow or --deny with a principal");
      const bindings: AclBinding[] = principals.flatMap(([permission, p]) =>
        operationsOf(o.operation).map((operation) => ({
          principal: principalArg(p),
          host: "*",
          resourceType: resourceType!,
          resourceName: resourceName!,
          patternType: o.prefixed ? "prefixed" : "literal",
          operation,
          permission,
        })),
      );
      await withAdmin(g, async (admin) => {
        await admin.createAcls(bindings);
        if (g.json) printJson(bindings);
        else
          process.stdout.write(
            `${bindings.length} ACL${bindings.length === 1 ? "" : "s"} created\n`,
          );
      });
    });

  addResourceFlags(
    acl.command("list").description("the ACLs matching the filter flags (all when none)"),
  )
    .option("--principal <p>", "only this principal's")
    .action(async (o: ResourceOptions & { principal?: string }, cmd: Command) => {
      const g = globals(cmd);
      await withAdmin(g, async (admin) => {
        print(g.json, await admin.describeAcls(filterOf(o)));
      });
    });

  addResourceFlags(
    acl
      .command("delete")
      .description(
        "delete the ACLs matching the filter flags (a resource or --principal is required)",
      ),
  )
    .option("--principal <p>", "only this principal's")
    .option("--operation <op>", "only this operation's (repeatable)", collect, [])
    .action(
      async (o: ResourceOptions & { principal?: string; operation: string[] }, cmd: Command) => {
        const g = globals(cmd);
        const base = filterOf(o);
        if (base.resourceType === undefined && base.principal === undefined)
          throw new UsageError(
            "give a resource flag or --principal (delete never removes every ACL at once)",
          );
        const filters =
          o.operation.length === 0
            ? [base]
            : operationsOf(o.operation).map((operation) => ({ ...base, operation }));
        await withAdmin(g, async (admin) => {
          const deleted = await admin.deleteAcls(filters);
          if (g.json) printJson(deleted);
          else
            process.stdout.write(
              `${deleted.length} ACL${deleted.length === 1 ? "" : "s"} deleted\n`,
            );
        });
      },
    );
}

function filterOf(o: ResourceOptions & { principal?: string }): AclFilter {
  const { resourceType, resourceName } = resourceOf(o, false);
  const patternType = resourceType === undefined ? undefined : o.prefixed ? "prefixed" : "literal";
  if (patternType !== undefined && !isPatternType(patternType)) throw new UsageError("bad pattern");
  return {
    principal: o.principal === undefined ? undefined : principalArg(o.principal),
    resourceType,
    resourceName,
    patternType,
  };
}

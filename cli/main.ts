#!/usr/bin/env node
// tern: the command-line tool. Exit codes: 0 ok, 1 the cluster answered with an error or could
// not be reached, 2 usage error. Tables for people; --json for scripts (stdout only, one JSON
// document, except `consume --json` which prints JSON lines).
import { Command, CommanderError } from "commander";
import { ClientError } from "../libs/client/index.js";
import { registerCluster } from "./commands/cluster.js";
import { registerConsume } from "./commands/consume.js";
import { registerGroup } from "./commands/group.js";
import { registerProduce } from "./commands/produce.js";
import { registerTopics } from "./commands/topics.js";
import { registerTxn } from "./commands/txn.js";
import { registerUser } from "./commands/user.js";
import { registerAcl } from "./commands/acl.js";
import { registerQuota } from "./commands/quota.js";
import { registerVerify } from "./commands/verify.js";
import { EXIT_CLUSTER_ERROR, EXIT_USAGE, UsageError } from "./output.js";
import { packageVersion } from "./version.js";

export function buildProgram(): Command {
  const program = new Command("tern")
    .description("command-line tool for a tern cluster")
    .version(
      `tern ${packageVersion()} (node ${process.version})`,
      "-V, --version",
      "print the version",
    )
    .option(
      "-b, --bootstrap <host:port>",
      "a controller address (comma-separated list allowed; env TERN_BOOTSTRAP)",
      undefined,
    )
    .option("--json", "machine-readable output on stdout")
    .option(
      "--tls-ca-file <file>",
      "TLS: the cluster CA (env TERN_TLS_CA_FILE; default: the local `cluster up --tls` one, else plaintext)",
    )
    .option("--tls-cert-file <file>", "TLS client certificate (env TERN_TLS_CERT_FILE)")
    .option("--tls-key-file <file>", "TLS client key (env TERN_TLS_KEY_FILE)")
    .option(
      "--username <name>",
      "a SCRAM user to call the cluster as (env TERN_USERNAME; password: env TERN_PASSWORD or --password-file; TLS only)",
    )
    .option("--password-file <file>", "the --username's password, first line of the file")
    .exitOverride()
    // A bad flag is one line (commander's "error: ..."), then exit 2; --help shows the usage.
    .showHelpAfterError(false);
  registerTopics(program);
  registerProduce(program);
  registerConsume(program);
  registerTxn(program);
  registerGroup(program);
  registerCluster(program);
  registerUser(program);
  registerAcl(program);
  registerQuota(program);
  registerVerify(program);
  for (const c of program.commands) {
    c.exitOverride();
    for (const sub of c.commands) sub.exitOverride();
  }
  return program;
}

export async function main(argv: readonly string[]): Promise<number> {
  try {
    await buildProgram().parseAsync([...argv], { from: "user" });
    return typeof process.exitCode === "number" ? process.exitCode : 0;
  } catch (e) {
    if (e instanceof CommanderError) {
      if (
        e.code === "commander.helpDisplayed" ||
        e.code === "commander.help" ||
        e.code === "commander.version"
      )
        return 0;
      return EXIT_USAGE;
    }
    if (e instanceof UsageError || e instanceof RangeError) {
      process.stderr.write(`usage error: ${e.message}\n`);
      return EXIT_USAGE;
    }
    const message = e instanceof ClientError ? e.message : String((e as Error)?.message ?? e);
    process.stderr.write(`error: ${message}\n`);
    return EXIT_CLUSTER_ERROR;
  }
}

const invokedDirectly =
  process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href;
if (invokedDirectly || process.argv[1]?.endsWith("/cli/main.js")) {
  // main() catches every error into an exit code, so this promise does not reject.
  void main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
    // Open gRPC channels could keep the process alive; everything is flushed by now.
    setTimeout(() => process.exit(code), 50).unref();
  });
}

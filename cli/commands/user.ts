// tern user create|list|delete: SCRAM users for the Kafka listeners' SASL (docs/security.md).
// The salt and salted password are computed here (Admin.upsertUserScramCredential); the
// password itself never leaves this process. `list` shows users and mechanisms, never keys.
import type { Command } from "commander";
import {
  isScramMechanism,
  SCRAM_ITERATIONS_MIN,
  type ScramMechanism,
} from "../../libs/common/scram.js";
import { EXIT_CLUSTER_ERROR, parseIntArg, printJson, printTable, UsageError } from "../output.js";
import { globals, withAdmin } from "./context.js";

/** A password on stdin is read up to this many bytes (one line). */
const PASSWORD_BYTES_MAX = 4096;

function mechanismArg(value: string): ScramMechanism {
  if (!isScramMechanism(value))
    throw new UsageError(`--mechanism: expected SCRAM-SHA-512 or SCRAM-SHA-256, got "${value}"`);
  return value;
}

async function readPasswordFromStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin) {
    size += (chunk as Buffer).length;
    if (size > PASSWORD_BYTES_MAX)
      throw new UsageError(`--password-stdin: more than ${PASSWORD_BYTES_MAX} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks)
    .toString("utf8")
    .replace(/\r?\n$/, "");
}

export function registerUser(program: Command): void {
  const user = program
    .command("user")
    .description("SCRAM users of the Kafka listeners (SASL/SCRAM-SHA-512)");

  user
    .command("create <name>")
    .description("create a user or replace its password")
    .option(
      "--password <password>",
      "the password (visible in the process list: prefer --password-stdin)",
    )
    .option("--password-stdin", "read the password from stdin (one line)")
    .option(
      "--iterations <n>",
      `PBKDF2 iterations (${SCRAM_ITERATIONS_MIN}..16384)`,
      String(SCRAM_ITERATIONS_MIN),
    )
    .option("--mechanism <m>", "SCRAM-SHA-512 or SCRAM-SHA-256", "SCRAM-SHA-512")
    .action(
      async (
        name: string,
        o: { password?: string; passwordStdin?: boolean; iterations: string; mechanism: string },
        cmd: Command,
      ) => {
        const g = globals(cmd);
        if ((o.password === undefined) === !o.passwordStdin)
          throw new UsageError("give exactly one of --password and --password-stdin");
        const password = o.password ?? (await readPasswordFromStdin());
        if (password.length === 0) throw new UsageError("the password must not be empty");
        const mechanism = mechanismArg(o.mechanism);
        const iterations = parseIntArg(o.iterations, "--iterations", SCRAM_ITERATIONS_MIN);
        await withAdmin(g, async (admin) => {
          await admin.upsertUserScramCredential(name, password, { iterations, mechanism });
          if (g.json) printJson({ user: name, mechanism, iterations });
          else
            process.stdout.write(
              `user ${name}: ${mechanism} credential set (${iterations} iterations)\n`,
            );
        });
      },
    );

  user
    .command("list [names...]")
    .alias("describe")
    .description("users and their mechanisms (all users when none named; never keys)")
    .action(async (names: string[], _o: unknown, cmd: Command) => {
      const g = globals(cmd);
      await withAdmin(g, async (admin) => {
        const out = await admin.describeUserScramCredentials(names ?? []);
        if (g.json) printJson(out);
        else
          printTable(
            ["USER", "MECHANISM", "ITERATIONS"],
            out.flatMap((u) =>
              u.error
                ? [[u.user, `error: ${u.error}`, "-"]]
                : u.credentials.map((c) => [u.user, c.mechanism, c.iterations]),
            ),
          );
        if (out.some((u) => u.error)) process.exitCode = EXIT_CLUSTER_ERROR;
      });
    });

  user
    .command("delete <name>")
    .description("delete a user's credential (open Kafka connections stay; new ones fail)")
    .option("--mechanism <m>", "SCRAM-SHA-512 or SCRAM-SHA-256", "SCRAM-SHA-512")
    .action(async (name: string, o: { mechanism: string }, cmd: Command) => {
      const g = globals(cmd);
      const mechanism = mechanismArg(o.mechanism);
      await withAdmin(g, async (admin) => {
        await admin.deleteUserScramCredential(name, mechanism);
        if (g.json) printJson({ user: name, mechanism, deleted: true });
        else process.stdout.write(`user ${name}: ${mechanism} credential deleted\n`);
      });
    });
}

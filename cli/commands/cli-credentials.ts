// The CLI's username and password for a cluster whose gRPC API wants credentials
// (`--grpc-authorizer acl`): --username NAME or TERN_USERNAME, with the password from
// TERN_PASSWORD or --password-file FILE (its first line). There is no global --password flag:
// a flag is visible in the process list, and `tern user create --password` already names the
// password of the user being created. Sent over TLS only (libs/server/tls/credentials.ts).
import { readFileSync } from "node:fs";
import { clientTlsEnabled, useClientPassword } from "../../libs/server/tls/credentials.js";
import type { PasswordCredentials } from "../../libs/grpc/client-credentials.js";
import { UsageError } from "../output.js";

export interface CliCredentialOptions {
  readonly username?: string;
  readonly passwordFile?: string;
}

/** The username and password the options name (undefined without a username). */
export function readCliPassword(
  o: CliCredentialOptions,
  env: NodeJS.ProcessEnv = process.env,
): { username: string; password: string } | undefined {
  const username = o.username ?? env.TERN_USERNAME;
  if (username === undefined || username.length === 0) {
    if (o.passwordFile !== undefined)
      throw new UsageError("--password-file needs --username (or TERN_USERNAME)");
    return undefined;
  }
  let password = env.TERN_PASSWORD;
  if (o.passwordFile !== undefined) {
    try {
      password = readFileSync(o.passwordFile, "utf8").split(/\r?\n/)[0] ?? "";
    } catch (e) {
      throw new UsageError(
        `--password-file ${o.passwordFile}: cannot read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
      );
    }
  }
  if (password === undefined)
    throw new UsageError(`--username ${username}: set TERN_PASSWORD or --password-file`);
  return { username, password };
}

/** The password the CLI's clients send (their `credentials` option); also set for its own channels. */
export function configureCliPassword(
  o: CliCredentialOptions,
  env: NodeJS.ProcessEnv = process.env,
): PasswordCredentials | undefined {
  const credentials = readCliPassword(o, env);
  if (credentials === undefined) return undefined;
  const { username, password } = credentials;
  if (!clientTlsEnabled())
    throw new UsageError(
      `--username ${username}: a password is only sent over TLS; give --tls-ca-file (or TERN_TLS_CA_FILE)`,
    );
  useClientPassword({ username, password });
  return credentials;
}

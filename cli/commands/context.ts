// What every command gets from the global options.
import type { Command } from "commander";
import { Admin, LOCAL_BOOTSTRAP, type ClientSecurityOptions } from "../../libs/client/index.js";
import { configureCliTls, type CliTlsOptions } from "./cli-tls.js";
import { configureCliPassword, type CliCredentialOptions } from "./cli-credentials.js";

export interface GlobalOptions {
  readonly bootstrap: string;
  readonly json: boolean;
  /** What every client the command creates takes: the bootstrap, its TLS and password. */
  readonly client: ClientSecurityOptions & { readonly bootstrap: string };
}

export function globals(cmd: Command): GlobalOptions {
  const o = cmd.optsWithGlobals() as { bootstrap?: string; json?: boolean } & CliTlsOptions &
    CliCredentialOptions;
  // Every command reads its globals before it connects: the one place to set up TLS.
  const tls = configureCliTls(o, o.bootstrap ?? process.env.TERN_BOOTSTRAP);
  const credentials = configureCliPassword(o);
  const bootstrap = o.bootstrap ?? process.env.TERN_BOOTSTRAP ?? LOCAL_BOOTSTRAP;
  return {
    bootstrap,
    json: Boolean(o.json),
    client: {
      bootstrap,
      ...(tls ? { tls } : {}),
      ...(credentials ? { credentials } : {}),
    },
  };
}

/** Runs f with an Admin client of the command's cluster, closed afterwards. */
export async function withAdmin<T>(
  g: GlobalOptions,
  f: (admin: Admin, json: boolean) => Promise<T>,
): Promise<T> {
  const admin = new Admin(g.client);
  try {
    return await f(admin, g.json);
  } finally {
    await admin.close();
  }
}

// What every command gets from the global options.
import type { Command } from "commander";
import { LOCAL_BOOTSTRAP } from "../../libs/client/index.js";
import { configureCliTls, type CliTlsOptions } from "./cli-tls.js";
import { configureCliPassword, type CliCredentialOptions } from "./cli-credentials.js";

export interface GlobalOptions {
  readonly bootstrap: string;
  readonly json: boolean;
}

export function globals(cmd: Command): GlobalOptions {
  const o = cmd.optsWithGlobals() as { bootstrap?: string; json?: boolean } & CliTlsOptions &
    CliCredentialOptions;
  // Every command reads its globals before it connects: the one place to set up TLS.
  configureCliTls(o, o.bootstrap ?? process.env.TERN_BOOTSTRAP);
  configureCliPassword(o);
  return {
    bootstrap: o.bootstrap ?? process.env.TERN_BOOTSTRAP ?? LOCAL_BOOTSTRAP,
    json: Boolean(o.json),
  };
}

// What every command gets from the global options.
import type { Command } from "commander";
import { LOCAL_BOOTSTRAP } from "../../libs/client/index.js";
import { configureCliTls, type CliTlsOptions } from "./cli-tls.js";

export interface GlobalOptions {
  readonly bootstrap: string;
  readonly json: boolean;
}

export function globals(cmd: Command): GlobalOptions {
  const o = cmd.optsWithGlobals() as { bootstrap?: string; json?: boolean } & CliTlsOptions;
  // Every command reads its globals before it connects: the one place to set up TLS.
  configureCliTls(o, o.bootstrap ?? process.env.TERN_BOOTSTRAP);
  return { bootstrap: o.bootstrap ?? process.env.TERN_BOOTSTRAP ?? LOCAL_BOOTSTRAP, json: Boolean(o.json) };
}

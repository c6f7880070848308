// How the CLI finds its TLS settings, first match wins: --tls-ca-file [--tls-cert-file
// --tls-key-file]; TERN_TLS_CA_FILE [TERN_TLS_CERT_FILE TERN_TLS_KEY_FILE]; the local cluster
// of this checkout when `cluster up --tls` started it and the CLI talks to it (no --bootstrap,
// or one of its addresses): its registry names the CA and client certificate; else plaintext.
import { localClusterDataDir, readLocalClusterAccess } from "../local-cluster.js";
import { useClientTlsFiles } from "../../libs/server/tls/credentials.js";
import { openClientTls, type ClientTlsFiles } from "../../libs/grpc/client-credentials.js";
import { TlsConfigError } from "../../libs/common/tls-config.js";
import { UsageError } from "../output.js";

export interface CliTlsOptions {
  readonly tlsCaFile?: string;
  readonly tlsCertFile?: string;
  readonly tlsKeyFile?: string;
}

let configured: { tls: ClientTlsFiles | undefined } | undefined;

/**
 * The TLS files the CLI's clients pass (their `tls` option; undefined: plaintext); also set
 * for the CLI's own channels (health checks, raw calls).
 */
export function configureCliTls(
  o: CliTlsOptions,
  bootstrap: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): ClientTlsFiles | undefined {
  if (configured) return configured.tls;
  configured = { tls: cliTlsFiles(o, bootstrap, env) };
  if (configured.tls) useClientTlsFiles(configured.tls);
  return configured.tls;
}

function cliTlsFiles(
  o: CliTlsOptions,
  bootstrap: string | undefined,
  env: NodeJS.ProcessEnv,
): ClientTlsFiles | undefined {
  const caFile = o.tlsCaFile ?? env.TERN_TLS_CA_FILE;
  try {
    if (caFile !== undefined) {
      const files = {
        caFile,
        certFile: o.tlsCertFile ?? env.TERN_TLS_CERT_FILE,
        keyFile: o.tlsKeyFile ?? env.TERN_TLS_KEY_FILE,
      };
      openClientTls(files); // TlsConfigError (a usage error) before any client exists
      return files;
    }
    if (o.tlsCertFile !== undefined || o.tlsKeyFile !== undefined)
      throw new UsageError(
        "--tls-cert-file/--tls-key-file need --tls-ca-file (or TERN_TLS_CA_FILE)",
      );
    const local = localClusterTls(bootstrap);
    if (local) openClientTls(local);
    return local;
  } catch (e) {
    if (e instanceof TlsConfigError) throw new UsageError(e.message);
    throw e;
  }
}

function localClusterTls(
  bootstrap: string | undefined,
): { caFile: string; certFile: string; keyFile: string } | undefined {
  try {
    const local = readLocalClusterAccess(localClusterDataDir());
    const tls = local?.tls;
    if (!tls) return undefined;
    const addresses = local.addresses;
    const targets =
      bootstrap
        ?.split(",")
        .map((a) => a.trim())
        .filter((a) => a.length > 0) ?? [];
    if (targets.length > 0 && !targets.every((a) => addresses.has(a))) return undefined;
    return tls;
  } catch {
    return undefined; // no checkout around this CLI, or an unreadable registry: plaintext
  }
}

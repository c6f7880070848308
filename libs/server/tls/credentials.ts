// The credentials of a tern process (a service, the CLI, a tool): serverCredentials() for the
// listener; processCredentials() / channelCredentials() for the process's own outgoing
// channels (peers, health checks, the CLI's calls). Plaintext unless TLS was configured: a
// service sets it from its flags at start (its own certificate is its client certificate:
// mutual TLS between tern processes); a tool from TERN_TLS_CA_FILE [+ TERN_TLS_CERT_FILE/
// TERN_TLS_KEY_FILE] or useClientTlsFiles(). SDK clients never read this: each takes its own
// (libs/grpc/client-credentials.ts). Both sides reload rotated files.
import * as grpc from "@grpc/grpc-js";
import {
  clientChannelCredentials,
  clientTlsFromEnv,
  openClientTls,
  type ChannelCredentialsSource,
  type ClientTlsFiles,
  type PasswordCredentials,
  type TlsContext,
} from "../../grpc/client-credentials.js";

export {
  openTls,
  type PasswordCredentials,
  type TlsContext,
} from "../../grpc/client-credentials.js";

/** Listener credentials: TLS with the server's certificate; client certificates requested, verified against the CA, optional at the handshake (peer-authorization.ts requires them per method). */
export function serverCredentials(tls: TlsContext | undefined): grpc.ServerCredentials {
  if (tls === undefined) return grpc.ServerCredentials.createInsecure();
  // grpc-js's first argument is the identity provider, the second the CA provider.
  const credentials = grpc.experimental.createCertificateProviderServerCredentials(
    tls.provider,
    tls.provider,
    false,
  );
  // grpc-js hands these options to http2.createSecureServer: a connection that has not finished
  // its TLS handshake in time is closed (Node's default waits 120 s, a slot held that long).
  const options = credentials._getConstructorOptions();
  if (options !== null) options.handshakeTimeout = GRPC_TLS_HANDSHAKE_TIMEOUT_MS;
  return credentials;
}

/** Time a gRPC connection has to finish its TLS handshake. */
export const GRPC_TLS_HANDSHAKE_TIMEOUT_MS = 10_000;

let processState: { tls: TlsContext | undefined; source: ChannelCredentialsSource } | undefined;
let processPassword: PasswordCredentials | undefined;

/** Sets this process's outgoing TLS (a service at start; tests; the CLI). */
export function useClientTls(tls: TlsContext | undefined): void {
  processState = { tls, source: clientChannelCredentials(tls) };
}

/** Convenience for tools: a CA file and optionally a client certificate and key. */
export function useClientTlsFiles(files: ClientTlsFiles): void {
  useClientTls(openClientTls(files));
}

/** Sets the password this process's channels send unless a call names its own (the CLI's --username). */
export function useClientPassword(credentials: PasswordCredentials | undefined): void {
  processPassword = credentials;
}

/** The first call without useClientTls() reads TERN_TLS_* once. */
function processSource(): { tls: TlsContext | undefined; source: ChannelCredentialsSource } {
  if (processState === undefined) useClientTls(clientTlsFromEnv());
  return processState!;
}

/**
 * What this process's client caches present: its TLS and useClientPassword()'s user, looked
 * up on each new channel (a service sets its TLS at start, after some caches exist).
 */
export function processCredentials(): ChannelCredentialsSource {
  return {
    get tlsEnabled() {
      return processSource().tls !== undefined;
    },
    channel: (password) => processSource().source.channel(password ?? processPassword),
  };
}

/** The credentials of one of this process's outgoing channels (the password: the call's, else useClientPassword()'s). */
export function channelCredentials(password?: PasswordCredentials): grpc.ChannelCredentials {
  return processSource().source.channel(password ?? processPassword);
}

/** True when this process's channels use TLS. */
export function clientTlsEnabled(): boolean {
  return processSource().tls !== undefined;
}

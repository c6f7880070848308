// The one place gRPC credentials come from. serverCredentials() for the listener;
// channelCredentials() for every outgoing channel of this process (peers, health checks,
// clients, the CLI). Plaintext unless TLS was configured: a service sets it from its flags at
// start (its own certificate is its client certificate: mutual TLS between tern processes);
// a client process from TERN_TLS_CA_FILE [+ TERN_TLS_CERT_FILE/TERN_TLS_KEY_FILE] or
// useClientTls(). Both sides reload rotated files (reloading-certificate-provider.ts).
import * as grpc from "@grpc/grpc-js";
import { AUTHORIZATION_HEADER, basicAuthorizationValue } from "../auth/password-verifier.js";
import { silenceIpServernameWarning } from "./ip-servername-warning.js";
import {
  ReloadingCertificateProvider,
  type ReloadEvents,
} from "./reloading-certificate-provider.js";
import {
  CLIENT_TLS_ENV,
  loadTlsMaterial,
  parseTlsConfig,
  type TlsConfig,
  type TlsFlagNames,
} from "../../common/tls-config.js";

/** A TLS setup ready to use: checked files and the provider that keeps them current. */
export interface TlsContext {
  readonly config: TlsConfig;
  readonly provider: ReloadingCertificateProvider;
}

/** Reads and checks the files (TlsConfigError on a problem) and starts watching them. */
export function openTls(
  config: TlsConfig,
  names: TlsFlagNames,
  events: ReloadEvents = {},
): TlsContext {
  const material = loadTlsMaterial(config, names);
  return { config, provider: new ReloadingCertificateProvider(config, material, names, events) };
}

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

let processTls:
  { context: TlsContext | undefined; credentials: grpc.ChannelCredentials } | undefined;

/** Sets what channelCredentials() returns for this process (a service at start; tests; the CLI). */
export function useClientTls(tls: TlsContext | undefined): void {
  processTls = { context: tls, credentials: buildChannelCredentials(tls) };
}

/** Convenience for clients: a CA file and optionally a client certificate and key. */
export function useClientTlsFiles(files: {
  caFile: string;
  certFile?: string | undefined;
  keyFile?: string | undefined;
  reloadMs?: number;
}): void {
  const config = parseTlsConfig(
    {
      ca: files.caFile,
      cert: files.certFile,
      key: files.keyFile,
      reloadMs: files.reloadMs?.toString(),
    },
    CLIENT_TLS_ENV,
    { requireIdentity: false },
  )!;
  useClientTls(openTls(config, CLIENT_TLS_ENV));
}

/** A gRPC client's username and password (SCRAM users: `tern user create`), sent with every call. */
export interface PasswordCredentials {
  readonly username: string;
  readonly password: string;
}

let processPassword: PasswordCredentials | undefined;

/** Sets the password every client channel of this process sends unless it names its own (the CLI's --username/--password). */
export function useClientPassword(credentials: PasswordCredentials | undefined): void {
  processPassword = credentials;
}

/**
 * The credentials of every outgoing channel; the first call without useClientTls() reads
 * TERN_TLS_* once. With a password (the client's own, else useClientPassword()'s) every call
 * carries `authorization: Basic ...` (libs/server/auth/password-verifier.ts): over TLS only,
 * anything else is an error here, before a password could cross the network in the clear.
 * Tern processes never set one: they are known by their certificates.
 */
export function channelCredentials(password?: PasswordCredentials): grpc.ChannelCredentials {
  if (processTls === undefined) {
    const env = process.env;
    const config = parseTlsConfig(
      {
        ca: env.TERN_TLS_CA_FILE,
        cert: env.TERN_TLS_CERT_FILE,
        key: env.TERN_TLS_KEY_FILE,
        reloadMs: env.TERN_TLS_RELOAD_MS,
      },
      CLIENT_TLS_ENV,
      { requireIdentity: false },
    );
    useClientTls(config ? openTls(config, CLIENT_TLS_ENV) : undefined);
  }
  const user = password ?? processPassword;
  if (user === undefined) return processTls!.credentials;
  if (processTls!.context === undefined) {
    throw new Error(
      `a username/password (user "${user.username}") is only sent over TLS: give the cluster CA (TERN_TLS_CA_FILE, --tls-ca-file or useClientTlsFiles())`,
    );
  }
  const header = basicAuthorizationValue(user.username, user.password);
  const callCredentials = grpc.credentials.createFromMetadataGenerator((_params, callback) => {
    const metadata = new grpc.Metadata();
    metadata.set(AUTHORIZATION_HEADER, header);
    callback(null, metadata);
  });
  return grpc.credentials.combineChannelCredentials(processTls!.credentials, callCredentials);
}

/** True when this process's channels use TLS. */
export function clientTlsEnabled(): boolean {
  channelCredentials();
  return processTls!.context !== undefined;
}

function buildChannelCredentials(tls: TlsContext | undefined): grpc.ChannelCredentials {
  if (tls === undefined) return grpc.credentials.createInsecure();
  silenceIpServernameWarning();
  const identity = tls.config.certFile !== undefined ? tls.provider : null;
  return grpc.experimental.createCertificateProviderChannelCredentials(tls.provider, identity);
}

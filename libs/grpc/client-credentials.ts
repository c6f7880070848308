// What one client's channels present to a tern process: plaintext, or TLS with the cluster CA
// (and a client certificate for mutual TLS), plus the user's password when it names one.
// Every client passes its own (an SDK client's `tls`/`credentials` options, a service's
// certificate from its flags): nothing here is set for the whole process.
import * as grpc from "@grpc/grpc-js";
import { AUTHORIZATION_HEADER, basicAuthorizationValue } from "./call-headers.js";
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
} from "../common/tls-config.js";

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

/** A client's TLS files: the cluster CA, optionally a client certificate and its key (PEM). */
export interface ClientTlsFiles {
  readonly caFile: string;
  readonly certFile?: string | undefined;
  readonly keyFile?: string | undefined;
  /** How often the files are checked for a rotation (default TLS_RELOAD_MS_DEFAULT). */
  readonly reloadMs?: number | undefined;
}

/** Opens a client's TLS files (TlsConfigError when they are missing or do not match). */
export function openClientTls(files: ClientTlsFiles): TlsContext {
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
  return openTls(config, CLIENT_TLS_ENV);
}

/** The TLS that TERN_TLS_CA_FILE [+ TERN_TLS_CERT_FILE/TERN_TLS_KEY_FILE] name, or undefined. */
export function clientTlsFromEnv(env: NodeJS.ProcessEnv = process.env): TlsContext | undefined {
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
  return config ? openTls(config, CLIENT_TLS_ENV) : undefined;
}

/** A gRPC client's username and password (SCRAM users: `tern user create`), sent with every call. */
export interface PasswordCredentials {
  readonly username: string;
  readonly password: string;
}

/** The credentials of one client's channels; `password` overrides the client's default user. */
export interface ChannelCredentialsSource {
  /** True when the channels use TLS. */
  readonly tlsEnabled: boolean;
  /** Throws when a password could not be sent (no TLS). */
  channel(password?: PasswordCredentials): grpc.ChannelCredentials;
}

/**
 * The channel credentials over `tls` (plaintext when undefined). With a password (the call's,
 * else `defaultPassword`) every call carries `authorization: Basic ...`: over TLS only,
 * anything else is an error here, before a password could cross the network in the clear.
 * Tern processes never send one: they are known by their certificates.
 */
export function clientChannelCredentials(
  tls: TlsContext | undefined,
  defaultPassword?: PasswordCredentials,
): ChannelCredentialsSource {
  const base = buildChannelCredentials(tls);
  return {
    tlsEnabled: tls !== undefined,
    channel(password?: PasswordCredentials): grpc.ChannelCredentials {
      const user = password ?? defaultPassword;
      if (user === undefined) return base;
      if (tls === undefined) {
        throw new Error(
          `a username/password (user "${user.username}") is only sent over TLS: give the cluster CA (the client's tls option, TERN_TLS_CA_FILE or --tls-ca-file)`,
        );
      }
      const header = basicAuthorizationValue(user.username, user.password);
      const callCredentials = grpc.credentials.createFromMetadataGenerator((_params, callback) => {
        const metadata = new grpc.Metadata();
        metadata.set(AUTHORIZATION_HEADER, header);
        callback(null, metadata);
      });
      return grpc.credentials.combineChannelCredentials(base, callCredentials);
    },
  };
}

function buildChannelCredentials(tls: TlsContext | undefined): grpc.ChannelCredentials {
  if (tls === undefined) return grpc.credentials.createInsecure();
  silenceIpServernameWarning();
  const identity = tls.config.certFile !== undefined ? tls.provider : null;
  return grpc.experimental.createCertificateProviderChannelCredentials(tls.provider, identity);
}

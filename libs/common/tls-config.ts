// TLS settings of a process or client: certificate, key and CA file paths, and how often the
// files are checked for a rotated certificate. Parsed from flags/env (services: --tls-*; the
// CLI and clients: TERN_TLS_*), validated at start so a missing, unreadable or mismatched file
// stops the process with one clear line instead of failing every handshake later.
import { readFileSync } from "node:fs";
import { createPrivateKey, X509Certificate, type KeyObject } from "node:crypto";

/** Reload check period when nothing says otherwise (rotation takes effect within this). */
export const TLS_RELOAD_MS_DEFAULT = 10_000;
export const TLS_RELOAD_MS_MIN = 100;
export const TLS_RELOAD_MS_MAX = 3_600_000;
/** PEM bundles larger than this are refused (a certificate chain is a few KiB). */
const PEM_BYTES_MAX = 1024 * 1024;

export interface TlsConfig {
  /** This side's certificate chain (PEM); with keyFile, or neither (a client without a certificate). */
  readonly certFile: string | undefined;
  readonly keyFile: string | undefined;
  /** The CA bundle (PEM) that peers' certificates must chain to. */
  readonly caFile: string;
  readonly reloadMs: number;
}

export class TlsConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TlsConfigError";
  }
}

/** What the files hold, checked: the key matches the certificate and the certificate chains to the CA. */
export interface TlsMaterial {
  readonly ca: Buffer;
  readonly cert: Buffer | undefined;
  readonly key: Buffer | undefined;
  /** The leaf certificate (first of certFile), when there is one. */
  readonly leaf: X509Certificate | undefined;
}

/** Flag names to report in errors, e.g. { cert: "--tls-cert-file", ... } or the env names. */
export interface TlsFlagNames {
  readonly cert: string;
  readonly key: string;
  readonly ca: string;
  readonly reloadMs: string;
}

export const SERVICE_TLS_FLAGS: TlsFlagNames = {
  cert: "--tls-cert-file",
  key: "--tls-key-file",
  ca: "--tls-ca-file",
  reloadMs: "--tls-reload-ms",
};
export const CLIENT_TLS_ENV: TlsFlagNames = {
  cert: "TERN_TLS_CERT_FILE",
  key: "TERN_TLS_KEY_FILE",
  ca: "TERN_TLS_CA_FILE",
  reloadMs: "TERN_TLS_RELOAD_MS",
};

/**
 * Builds a TlsConfig from raw values; undefined when none is set (plaintext). `requireIdentity`:
 * a server needs a certificate and key; a client may go without (no client certificate).
 */
export function parseTlsConfig(
  raw: {
    cert?: string | undefined;
    key?: string | undefined;
    ca?: string | undefined;
    reloadMs?: string | undefined;
  },
  names: TlsFlagNames,
  options: { requireIdentity: boolean },
): TlsConfig | undefined {
  const cert = nonEmpty(raw.cert);
  const key = nonEmpty(raw.key);
  const ca = nonEmpty(raw.ca);
  if (cert === undefined && key === undefined && ca === undefined) return undefined;
  if (ca === undefined)
    throw new TlsConfigError(
      `${names.ca} is required when TLS is configured (${names.cert}/${names.key} given)`,
    );
  if ((cert === undefined) !== (key === undefined))
    throw new TlsConfigError(`${names.cert} and ${names.key} go together: both or neither`);
  if (options.requireIdentity && cert === undefined)
    throw new TlsConfigError(
      `${names.cert} and ${names.key} are required with ${names.ca}: a TLS listener needs its own certificate`,
    );
  let reloadMs = TLS_RELOAD_MS_DEFAULT;
  if (raw.reloadMs !== undefined && raw.reloadMs !== "") {
    if (!/^\d+$/.test(raw.reloadMs.trim()))
      throw new TlsConfigError(`${names.reloadMs}: expected an integer, got "${raw.reloadMs}"`);
    reloadMs = Number(raw.reloadMs);
    if (reloadMs < TLS_RELOAD_MS_MIN || reloadMs > TLS_RELOAD_MS_MAX)
      throw new TlsConfigError(
        `${names.reloadMs}: ${reloadMs} is outside ${TLS_RELOAD_MS_MIN}..${TLS_RELOAD_MS_MAX}`,
      );
  }
  return { certFile: cert, keyFile: key, caFile: ca, reloadMs };
}

/** Reads and checks the files; throws TlsConfigError naming the file and what is wrong. */
export function loadTlsMaterial(
  config: TlsConfig,
  names: TlsFlagNames = SERVICE_TLS_FLAGS,
  now: Date = new Date(),
): TlsMaterial {
  const ca = readPem(config.caFile, names.ca);
  const caCerts = parseCertificates(ca, config.caFile, names.ca);
  if (config.certFile === undefined || config.keyFile === undefined)
    return { ca, cert: undefined, key: undefined, leaf: undefined };
  const cert = readPem(config.certFile, names.cert);
  const key = readPem(config.keyFile, names.key);
  const leaf = parseCertificates(cert, config.certFile, names.cert)[0]!;
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(key);
  } catch (e) {
    throw new TlsConfigError(
      `${names.key} ${config.keyFile}: not a PEM private key (${firstLine(e)})`,
    );
  }
  if (!leaf.checkPrivateKey(privateKey))
    throw new TlsConfigError(
      `${names.key} ${config.keyFile} does not match the certificate in ${names.cert} ${config.certFile}`,
    );
  if (!caCerts.some((c) => leaf.checkIssued(c) && leaf.verify(c.publicKey))) {
    throw new TlsConfigError(
      `${names.cert} ${config.certFile} (subject ${oneLine(leaf.subject)}) is not signed by a CA in ${names.ca} ${config.caFile}`,
    );
  }
  if (new Date(leaf.validTo).getTime() < now.getTime())
    throw new TlsConfigError(`${names.cert} ${config.certFile} expired on ${leaf.validTo}`);
  if (new Date(leaf.validFrom).getTime() > now.getTime())
    throw new TlsConfigError(
      `${names.cert} ${config.certFile} is not valid before ${leaf.validFrom}`,
    );
  return { ca, cert, key, leaf };
}

function readPem(path: string, what: string): Buffer {
  let data: Buffer;
  try {
    data = readFileSync(path);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    const reason =
      code === "ENOENT"
        ? "no such file"
        : code === "EACCES"
          ? "permission denied"
          : code === "EISDIR"
            ? "is a directory"
            : firstLine(e);
    throw new TlsConfigError(`${what} ${path}: cannot read (${reason})`);
  }
  if (data.length > PEM_BYTES_MAX)
    throw new TlsConfigError(
      `${what} ${path}: ${data.length} bytes is more than a PEM file should be (${PEM_BYTES_MAX})`,
    );
  if (data.length === 0) throw new TlsConfigError(`${what} ${path}: the file is empty`);
  return data;
}

/** Every certificate of a PEM bundle (a CA file may hold the old and the new CA during a CA rotation). */
export function parseCertificates(pem: Buffer, path: string, what: string): X509Certificate[] {
  const blocks =
    pem.toString("utf8").match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ??
    [];
  if (blocks.length === 0)
    throw new TlsConfigError(`${what} ${path}: no PEM certificate in the file`);
  return blocks.map((b) => {
    try {
      return new X509Certificate(b);
    } catch (e) {
      throw new TlsConfigError(`${what} ${path}: a certificate does not parse (${firstLine(e)})`);
    }
  });
}

function nonEmpty(v: string | undefined): string | undefined {
  return v === undefined || v.trim() === "" ? undefined : v;
}

function firstLine(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).split("\n")[0]!;
}

function oneLine(s: string): string {
  return s.split("\n").join(", ");
}

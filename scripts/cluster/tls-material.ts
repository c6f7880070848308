// Certificates for a local cluster (`cluster up --tls`, tests, the bench), made with the openssl
// CLI (Node's crypto cannot issue X.509 certificates): a cluster CA, one certificate per process
// whose SAN URI tern:role:<role> is its peer role (plus DNS:localhost and IP:127.0.0.1, the
// addresses the local cluster uses), and a client certificate without a role for the CLI.
// Everything lands in <data-dir>/tls; files are written to a temporary name and renamed, so a
// watching process never reads half a file.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { isIP } from "node:net";
import { join } from "node:path";
import type { Role } from "../../libs/common/config.js";
import { NODE_URI_PREFIX, ROLE_URI_PREFIX } from "../../libs/server/tls/principal.js";

const CA_DAYS = 3650;
const LEAF_DAYS_DEFAULT = 825;
const OPENSSL_TIMEOUT_MS = 30_000;

export interface CertificateFiles {
  readonly certFile: string;
  readonly keyFile: string;
}

export interface ClusterTlsFiles {
  readonly dir: string;
  readonly caFile: string;
  readonly caKeyFile: string;
  /** The CLI's and tests' client certificate (CN tern-admin, no peer role). */
  readonly client: CertificateFiles;
}

export function tlsDir(dataDir: string): string {
  return join(dataDir, "tls");
}

/** The CA and client files of <dataDir>/tls; creates them when missing (an existing CA is kept). */
export function ensureClusterCa(dataDir: string): ClusterTlsFiles {
  const dir = tlsDir(dataDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const files = clusterTlsFiles(dataDir);
  if (!existsSync(files.caFile) || !existsSync(files.caKeyFile))
    createCa(dir, "ca", "tern local cluster CA");
  if (!existsSync(files.client.certFile) || !existsSync(files.client.keyFile))
    issueCertificate(files, "client", { commonName: "tern-admin" });
  return files;
}

export function clusterTlsFiles(dataDir: string): ClusterTlsFiles {
  const dir = tlsDir(dataDir);
  return {
    dir,
    caFile: join(dir, "ca.crt"),
    caKeyFile: join(dir, "ca.key"),
    client: { certFile: join(dir, "client.crt"), keyFile: join(dir, "client.key") },
  };
}

/** A self-signed CA named <name>.crt/.key in dir (tests use a second one as the untrusted CA). */
export function createCa(
  dir: string,
  name: string,
  commonName: string,
): { caFile: string; caKeyFile: string } {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const caFile = join(dir, `${name}.crt`);
  const caKeyFile = join(dir, `${name}.key`);
  const tmp = `.${name}-${randomBytes(4).toString("hex")}`;
  openssl([
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:prime256v1",
    "-nodes",
    "-keyout",
    join(dir, `${tmp}.key`),
    "-out",
    join(dir, `${tmp}.crt`),
    "-days",
    String(CA_DAYS),
    "-subj",
    `/O=tern/CN=${commonName}`,
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
  ]);
  chmodSync(join(dir, `${tmp}.key`), 0o600);
  renameSync(join(dir, `${tmp}.key`), caKeyFile);
  renameSync(join(dir, `${tmp}.crt`), caFile);
  return { caFile, caKeyFile };
}

/**
 * Issues <name>.crt/.key in the CA's directory (or `outDir`), signed by the given CA. `role`
 * puts the SAN URI tern:role:<role> in it (a tern process; `nodeId` adds tern:node:<id>, which
 * binds it to that node); without it, a user certificate.
 * Re-issuing under the same name replaces the files (a rotation): key first, then certificate.
 */
export function issueCertificate(
  ca: { dir?: string; caFile: string; caKeyFile: string },
  name: string,
  options: {
    commonName: string;
    role?: Role;
    /** Binds the certificate to this node id (SAN URI tern:node:<id>). */
    nodeId?: number;
    days?: number;
    outDir?: string;
    hosts?: readonly string[];
  },
): CertificateFiles {
  const dir = options.outDir ?? ca.dir ?? join(ca.caFile, "..");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = join(dir, `.${name}-${randomBytes(4).toString("hex")}`);
  // The addresses peers dial must be in the SAN (chaos runs give each process its own 127.0.0.x).
  const hosts = [...new Set(["localhost", "127.0.0.1", ...(options.hosts ?? [])])];
  const san = [
    ...(options.role ? [`URI:${ROLE_URI_PREFIX}${options.role}`] : []),
    ...(options.nodeId !== undefined ? [`URI:${NODE_URI_PREFIX}${options.nodeId}`] : []),
    ...hosts.map((h) => (isIP(h) ? `IP:${h}` : `DNS:${h}`)),
  ].join(",");
  writeFileSync(
    `${tmp}.ext`,
    `subjectAltName=${san}\nbasicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\n`,
  );
  try {
    openssl([
      "req",
      "-new",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      `${tmp}.key`,
      "-out",
      `${tmp}.csr`,
      "-subj",
      `/O=tern/CN=${options.commonName}`,
    ]);
    openssl([
      "x509",
      "-req",
      "-in",
      `${tmp}.csr`,
      "-CA",
      ca.caFile,
      "-CAkey",
      ca.caKeyFile,
      "-set_serial",
      `0x${randomBytes(16).toString("hex")}`,
      "-days",
      String(options.days ?? LEAF_DAYS_DEFAULT),
      "-extfile",
      `${tmp}.ext`,
      "-out",
      `${tmp}.crt`,
    ]);
    chmodSync(`${tmp}.key`, 0o600);
    const files = { certFile: join(dir, `${name}.crt`), keyFile: join(dir, `${name}.key`) };
    renameSync(`${tmp}.key`, files.keyFile);
    renameSync(`${tmp}.crt`, files.certFile);
    return files;
  } finally {
    for (const ext of [".ext", ".csr", ".key", ".crt"]) rmSync(`${tmp}${ext}`, { force: true });
  }
}

/** The certificate of one cluster process (SANs: localhost, 127.0.0.1 and `host`), issued when missing. */
export function ensureProcessCertificate(
  files: ClusterTlsFiles,
  role: Role,
  id: number,
  host?: string,
): CertificateFiles {
  const name = `${role}-${id}`;
  const out = { certFile: join(files.dir, `${name}.crt`), keyFile: join(files.dir, `${name}.key`) };
  if (existsSync(out.certFile) && existsSync(out.keyFile)) return out;
  return issueCertificate(files, name, {
    commonName: `tern-${name}`,
    role,
    nodeId: id,
    ...(host !== undefined ? { hosts: [host] } : {}),
  });
}

/** The host part of HOST:PORT. */
export function hostOf(address: string): string {
  return address.slice(0, address.lastIndexOf(":")).replace(/^\[|\]$/g, "");
}

/** The service flags that turn TLS on with these files. */
export function serviceTlsArgs(
  files: ClusterTlsFiles,
  own: CertificateFiles,
  reloadMs?: number,
): string[] {
  return [
    "--tls-ca-file",
    files.caFile,
    "--tls-cert-file",
    own.certFile,
    "--tls-key-file",
    own.keyFile,
    ...(reloadMs !== undefined ? ["--tls-reload-ms", String(reloadMs)] : []),
  ];
}

function openssl(args: string[]): void {
  try {
    execFileSync("openssl", args, {
      stdio: ["ignore", "ignore", "pipe"],
      timeout: OPENSSL_TIMEOUT_MS,
    });
  } catch (e) {
    const err = e as NodeJS.ErrnoException & { stderr?: Buffer };
    if (err.code === "ENOENT")
      throw new Error(
        "the openssl command is needed to generate TLS certificates (apt-get install openssl)",
        { cause: e },
      );
    throw new Error(
      `openssl ${args[0]} failed: ${(err.stderr?.toString() ?? err.message).trim().split("\n")[0]}`,
      { cause: e },
    );
  }
}

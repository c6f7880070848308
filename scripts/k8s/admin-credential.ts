// The admin credential of a Kubernetes deployment (deploy/k8s/components/security), run as a
// Job in the tern image: `node dist/scripts/k8s/admin-credential.js`.
//  1. Reads the Secret $TERN_ADMIN_SECRET (username, password) through the Kubernetes API with
//     the pod's service account; the first time, creates it with a random 32-byte password
//     (base64url). Another run that created it meanwhile wins: its Secret is read back.
//  2. Creates or refreshes the SCRAM user with that password through the controllers
//     ($TERN_BOOTSTRAP), as the admin client certificate (TERN_TLS_* files, a super-user).
// The password is never printed. Exit 1 with one line on a failure (the Job retries).
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { request } from "node:https";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Admin } from "../../libs/client/index.js";

const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";
const PASSWORD_BYTES = 32;
const API_TIMEOUT_MS = 10_000;

interface Credential {
  readonly username: string;
  readonly password: string;
}

/** A new credential: the user name and a random password, nothing derived from anything else. */
export function newCredential(username = "admin"): Credential {
  return { username, password: randomBytes(PASSWORD_BYTES).toString("base64url") };
}

/** The Secret object that holds a credential (values base64, as the API wants them). */
export function credentialSecret(name: string, c: Credential): Record<string, unknown> {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: { name, labels: { "app.kubernetes.io/name": "tern-admin" } },
    type: "kubernetes.io/basic-auth",
    data: {
      username: Buffer.from(c.username).toString("base64"),
      password: Buffer.from(c.password).toString("base64"),
    },
  };
}

function credentialOf(secret: { data?: Record<string, string> }): Credential {
  const field = (k: string): string => Buffer.from(secret.data?.[k] ?? "", "base64").toString();
  const c = { username: field("username"), password: field("password") };
  if (c.username === "" || c.password === "")
    throw new Error("the Secret lacks username or password");
  return c;
}

/** What the API server answered: a Secret (GET 200, POST 201) or a Status with a message. */
interface ApiAnswer {
  readonly status: number;
  readonly body?: { data?: Record<string, string>; message?: string } | undefined;
}

export interface Api {
  call(method: "GET" | "POST", path: string, body?: unknown): Promise<ApiAnswer>;
}

/** The in-cluster Kubernetes API with the pod's service account token. */
function inClusterApi(): Api {
  const host = process.env.KUBERNETES_SERVICE_HOST;
  const port = process.env.KUBERNETES_SERVICE_PORT ?? "443";
  if (!host) throw new Error("not in a Kubernetes pod (KUBERNETES_SERVICE_HOST is unset)");
  const token = readFileSync(`${SERVICE_ACCOUNT_DIR}/token`, "utf8").trim();
  const ca = readFileSync(`${SERVICE_ACCOUNT_DIR}/ca.crt`);
  return {
    call: (method, path, body) =>
      new Promise((resolve, reject) => {
        const payload = body === undefined ? undefined : JSON.stringify(body);
        const req = request(
          {
            host,
            port,
            path,
            method,
            ca,
            timeout: API_TIMEOUT_MS,
            headers: {
              authorization: `Bearer ${token}`,
              accept: "application/json",
              ...(payload ? { "content-type": "application/json" } : {}),
            },
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (c: Buffer) => chunks.push(c));
            res.on("end", () => {
              const text = Buffer.concat(chunks).toString();
              let parsed: ApiAnswer["body"];
              try {
                parsed = text ? (JSON.parse(text) as ApiAnswer["body"]) : undefined;
              } catch {
                parsed = { message: text.slice(0, 200) };
              }
              resolve({ status: res.statusCode ?? 0, body: parsed });
            });
          },
        );
        req.on("timeout", () => req.destroy(new Error(`${method} ${path}: timed out`)));
        req.on("error", reject);
        req.end(payload);
      }),
  };
}

/** The stored credential, created first when there is none (step 1). */
export async function ensureCredential(
  api: Api,
  namespace: string,
  name: string,
): Promise<{ credential: Credential; created: boolean }> {
  const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`;
  const existing = await api.call("GET", `${path}/${encodeURIComponent(name)}`);
  if (existing.status === 200)
    return { credential: credentialOf(existing.body ?? {}), created: false };
  if (existing.status !== 404)
    throw new Error(
      `reading Secret ${name}: HTTP ${existing.status} ${existing.body?.message ?? ""}`,
    );
  const fresh = newCredential();
  const made = await api.call("POST", path, credentialSecret(name, fresh));
  if (made.status === 201) return { credential: fresh, created: true };
  if (made.status === 409) {
    const again = await api.call("GET", `${path}/${encodeURIComponent(name)}`);
    if (again.status === 200) return { credential: credentialOf(again.body ?? {}), created: false };
  }
  throw new Error(`creating Secret ${name}: HTTP ${made.status} ${made.body?.message ?? ""}`);
}

async function main(): Promise<void> {
  const name = process.env.TERN_ADMIN_SECRET ?? "tern-admin-credential";
  const namespace = readFileSync(`${SERVICE_ACCOUNT_DIR}/namespace`, "utf8").trim();
  const { credential, created } = await ensureCredential(inClusterApi(), namespace, name);
  const admin = new Admin({ bootstrap: process.env.TERN_BOOTSTRAP ?? "tern-bootstrap:9090" });
  try {
    await admin.upsertUserScramCredential(credential.username, credential.password);
  } finally {
    await admin.close();
  }
  process.stdout.write(
    `admin credential: user "${credential.username}" set from Secret ${namespace}/${name} (${created ? "created now" : "existing"})\n`,
  );
}

if (
  process.argv[1] !== undefined &&
  path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)
) {
  main().catch((e: Error) => {
    process.stderr.write(`admin-credential: ${e.message}\n`);
    process.exit(1);
  });
}

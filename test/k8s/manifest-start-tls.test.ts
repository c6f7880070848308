// The secure default manifests (deploy/k8s: TLS, --security acl) and the binaries agree: every pod of the rendered
// StatefulSets runs as a local process (as in manifest-start.test.ts) with its role's
// certificate laid out as the kubelet lays out the mounted Secret (tls.crt, tls.key, ca.crt
// behind the ..data symlink), issued from the Certificate resources' own SANs by
// scripts/cluster/tls-material.ts. The pods must pass their HTTP probes, answer gRPC health
// SERVING over TLS, form the cluster over mutual TLS, let a CLI with the CA and the admin
// client certificate in (and keep one without credentials, and a plaintext one, out), pick up a renewed Secret without a restart, and stop with exit 0.
// Needs the build (npm test runs it first) and the openssl command.
import { afterAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import tls from "node:tls";
import type { Role } from "../../libs/common/config.js";
import { silentLogger } from "../../libs/common/logger.js";
import { until } from "../../libs/common/poll.js";
import { ControllerClient } from "../../libs/metadata/controller-client.js";
import type { ClusterMetadata } from "../../libs/metadata/types.js";
import { checkHealth } from "../../libs/server/health-client.js";
import { useClientTlsFiles, processCredentials } from "../../libs/server/tls/credentials.js";
import { createCa, issueCertificate } from "../../scripts/cluster/tls-material.js";
import { imageDefaults } from "../../scripts/k8s/dockerfile-lint.js";
import {
  logTail,
  startPod,
  terminatePod,
  waitForProbes,
  type RunningPod,
} from "../../scripts/k8s/local-pods.js";
import { planPods, type PodPlan } from "../../scripts/k8s/pod-plan.js";
import { renderObjects } from "../../scripts/k8s/render.js";
import { repoRoot } from "../../scripts/k8s/repo-root.js";
import { writeSecretVolume } from "../../scripts/k8s/secret-volume.js";

const root = repoRoot();
// Generous bounds: nine Node processes share two cores with everything else running.
const PROBES_TIMEOUT_MS = 180_000;
const FORM_TIMEOUT_MS = 60_000;
const TEST_TIMEOUT_MS = 480_000;
const POLL_MS = 250;
const CLI_TIMEOUT_MS = 60_000;
const HANDSHAKE_TIMEOUT_MS = 3_000;
/** TERN_TLS_RELOAD_MS of the manifests (10 s) plus slack for a loaded machine. */
const ROTATION_TIMEOUT_MS = 40_000;
const SUBNET = 20 + ((process.pid + 97) % 200);

const running: RunningPod[] = [];
const tempDirs: string[] = [];

afterAll(async () => {
  for (const pod of running) if (pod.exit() === undefined) pod.child.kill("SIGKILL");
  await Promise.all(running.map((p) => p.exited));
  if (process.env.TERN_K8S_KEEP === "1") console.error(`kept: ${tempDirs.join(" ")}`);
  else for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

function roleOf(certificate: any): Role {
  const uri = (certificate.spec.uris as string[]).find((u) => u.startsWith("tern:role:"))!;
  return uri.slice("tern:role:".length) as Role;
}

/** The Secret's three keys for one role, issued with the Certificate's SANs plus the local pod addresses. */
function issueForRole(
  ca: { caFile: string; caKeyFile: string },
  certificate: any,
  ips: readonly string[],
  outDir: string,
): Record<string, Buffer> {
  const role = roleOf(certificate);
  const files = issueCertificate(ca, `${certificate.spec.secretName}-${Date.now()}`, {
    commonName: certificate.spec.commonName,
    role,
    days: 90,
    outDir,
    hosts: [...(certificate.spec.dnsNames as string[]), ...ips],
  });
  return {
    "tls.crt": readFileSync(files.certFile),
    "tls.key": readFileSync(files.keyFile),
    "ca.crt": readFileSync(ca.caFile),
  };
}

/** The serial of the certificate a TLS listener presents now. */
function servedSerial(host: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host, port, rejectUnauthorized: false, ALPNProtocols: ["h2"] });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error("TLS handshake timed out"));
    }, HANDSHAKE_TIMEOUT_MS);
    socket.once("secureConnect", () => {
      clearTimeout(timer);
      const serial = socket.getPeerCertificate().serialNumber;
      socket.destroy();
      resolve(serial.toUpperCase());
    });
    socket.once("error", (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

/** The CLI argv of docs/deploy-k8s.md's TLS section (the command that sets TERN_TLS_CA_FILE). */
function documentedTlsCliCommand(): string[] {
  const doc = readFileSync(path.join(root, "docs/deploy-k8s.md"), "utf8");
  const section = doc.slice(doc.indexOf("## 3. Use it"));
  const m = /"TERN_TLS_CA_FILE"[\s\S]*?"command":(\[[^\]]*dist\/cli\/main\.js[^\]]*\])/.exec(
    section,
  );
  if (m === null)
    throw new Error("docs/deploy-k8s.md's section 3 has no CLI command with TERN_TLS_CA_FILE");
  return JSON.parse(m[1]!) as string[];
}

/** Polls metadata (shared bounded poll) until done; the last view seen when it never is. */
async function pollMetadata(
  client: ControllerClient,
  done: (m: ClusterMetadata) => boolean,
  timeoutMs: number,
): Promise<ClusterMetadata | undefined> {
  let last: ClusterMetadata | undefined;
  const probe = async (): Promise<ClusterMetadata | undefined> => {
    last = await client.metadata().catch(() => last);
    return last !== undefined && done(last) ? last : undefined;
  };
  return until("metadata", timeoutMs, probe, { intervalMs: POLL_MS }).catch(() => last);
}

describe("manifest-driven start with TLS", () => {
  it(
    "the TLS pods start from their mounted Secrets, pass HTTP probes, serve TLS, form the cluster and take a renewed Secret without a restart",
    async () => {
      const objects = renderObjects(path.join(root, "deploy/k8s"));
      const volumeRoot = mkdtempSync(path.join(tmpdir(), "tern-k8s-tls-"));
      tempDirs.push(volumeRoot);
      const plans: PodPlan[] = planPods({
        objects,
        image: imageDefaults(readFileSync(path.join(root, "Dockerfile"), "utf8")),
        appDir: root,
        volumeRoot,
        ipFor: (i) => `127.46.${SUBNET}.${i + 1}`,
        hostEnv: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
      });
      expect(plans).toHaveLength(9);
      for (const p of plans) {
        const script = path.join(
          p.cwd,
          p.argv.find((a) => a.endsWith(".js"))!,
        );
        if (!existsSync(script))
          throw new Error(`${script} is missing: run \`npm run build\` first`);
      }

      // cert-manager's part: one Secret per role from its Certificate; the kubelet's: the mount.
      const ca = createCa(path.join(volumeRoot, "issuer"), "ca", "tern k8s test CA");
      const certificates: any[] = objects.filter(
        (o) => o.kind === "Certificate" && (o as any).spec.uris !== undefined,
      );
      // The admin client's (no role: a user, User:tern-admin, a super-user of the manifests).
      const adminCertificate: any = objects.find(
        (o) => o.kind === "Certificate" && o.metadata.name === "tern-admin",
      );
      const admin = issueCertificate(ca, "tern-admin", {
        commonName: adminCertificate.spec.commonName,
        outDir: path.join(volumeRoot, "issuer"),
      });
      const secrets = new Map<string, Record<string, Buffer>>();
      for (const certificate of certificates) {
        const ips = plans
          .filter((p) => p.statefulSet === `tern-${roleOf(certificate)}`)
          .map((p) => p.ip);
        secrets.set(
          certificate.spec.secretName,
          issueForRole(ca, certificate, ips, path.join(volumeRoot, "issuer")),
        );
      }
      const secretDirOf = (p: PodPlan) => path.dirname(p.env.TERN_TLS_CERT_FILE!);
      for (const p of plans) {
        const set: any = objects.find(
          (o) => o.kind === "StatefulSet" && o.metadata.name === p.statefulSet,
        )!;
        const secretName: string = set.spec.template.spec.volumes.find((v: any) => v.name === "tls")
          .secret.secretName;
        expect(p.volumeDirs).toContain(secretDirOf(p));
        expect(path.dirname(p.env.TERN_TLS_KEY_FILE!)).toBe(secretDirOf(p));
        writeSecretVolume(secretDirOf(p), secrets.get(secretName)!);
      }

      const logDir = path.join(volumeRoot, "logs");
      const pods = plans.map((p) => startPod(p, logDir));
      running.push(...pods);

      // The kubelet's part: the probes are HTTP on the metrics port, and they pass.
      expect(
        new Set(plans.flatMap((p) => p.probes.map((probe) => `${probe.type}:${probe.target}`))),
      ).toEqual(new Set(["http:/healthz", "http:/livez"]));
      const probes = await waitForProbes(
        pods,
        ["startup", "readiness", "liveness"],
        PROBES_TIMEOUT_MS,
      );
      expect(probes.exited, JSON.stringify(probes.exited)).toEqual([]);
      expect(
        probes.passed,
        JSON.stringify(probes.answers) +
          pods.map((p) => `\n--- ${p.plan.podName}:\n${logTail(p)}`).join(""),
      ).toBe(true);

      // gRPC health over TLS (what a grpc: probe would have asked, with the CA): SERVING everywhere.
      const caFile = path.join(secretDirOf(plans[0]!), "ca.crt");
      // The admin client certificate: with --security acl, Metadata needs credentials too.
      useClientTlsFiles({ caFile, certFile: admin.certFile, keyFile: admin.keyFile });
      for (const p of plans) {
        const port = Number(p.env.TERN_LISTEN!.split(":")[1]);
        expect(await checkHealth(`${p.ip}:${port}`, { timeoutMs: 5_000 }), p.podName).toBe(
          "SERVING",
        );
      }

      // The pods found each other over mutual TLS at their advertised addresses.
      const controllers = plans
        .filter((p) => p.statefulSet === "tern-controller")
        .map((p) => ({ id: p.ordinal, host: p.ip, port: 9090 }));
      const client = new ControllerClient({
        channelCredentials: processCredentials(),
        controllers,
        logger: silentLogger(),
        requestTimeoutMs: 2_000,
      });
      try {
        const expected = plans
          .filter((p) => p.statefulSet !== "tern-controller")
          .map((p) => `${p.statefulSet.replace("tern-", "")}/${p.ordinal}@${p.env.TERN_ADVERTISE}`)
          .sort();
        const seen = (m: ClusterMetadata) =>
          m.nodes
            .filter((n) => n.alive)
            .map((n) => `${n.role}/${n.nodeId}@${n.address}`)
            .sort();
        const metadata = await pollMetadata(
          client,
          (m) => m.controllerLeader >= 0 && JSON.stringify(seen(m)) === JSON.stringify(expected),
          FORM_TIMEOUT_MS,
        );
        expect(seen(metadata!)).toEqual(expected);
      } finally {
        client.close();
      }

      // A client in the cluster with the Secret's ca.crt gets in; a plaintext one does not.
      const controller0 = plans.find((p) => p.podName === "tern-controller-0")!;
      const cli = (env: Record<string, string>) =>
        spawnSync(
          process.execPath,
          [
            "dist/cli/main.js",
            "--bootstrap",
            `${controller0.ip}:9090`,
            "cluster",
            "status",
            "--exit-when-healthy",
            "--timeout-ms",
            "30000",
          ],
          {
            cwd: root,
            encoding: "utf8",
            timeout: CLI_TIMEOUT_MS,
            env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env },
          },
        );
      const adminEnv = {
        TERN_TLS_CA_FILE: caFile,
        TERN_TLS_CERT_FILE: admin.certFile,
        TERN_TLS_KEY_FILE: admin.keyFile,
      };
      const withCa = cli(adminEnv);
      expect({ status: withCa.status, stderr: withCa.stderr }).toEqual({ status: 0, stderr: "" });
      expect(withCa.stdout).toMatch(/controller/i);
      // --security acl: the CA alone (no credentials) is not enough.
      const anonymous = cli({ TERN_TLS_CA_FILE: caFile });
      expect(anonymous.status, anonymous.stdout).not.toBe(0);
      expect(anonymous.stdout + anonymous.stderr).toMatch(
        /credentials|UNAUTHENTICATED|SASL_AUTHENTICATION_FAILED/,
      );
      // docs/deploy-k8s.md's in-cluster TLS CLI command, its --bootstrap pointed at controller 0.
      const docCommand = documentedTlsCliCommand();
      const bootstrapAt = docCommand.indexOf("--bootstrap") + 1;
      expect(docCommand[bootstrapAt]).toBe("tern-bootstrap:9090");
      const documented = spawnSync(
        process.execPath,
        docCommand.slice(1).map((a, i) => (i + 1 === bootstrapAt ? `${controller0.ip}:9090` : a)),
        {
          cwd: root,
          encoding: "utf8",
          timeout: CLI_TIMEOUT_MS,
          env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...adminEnv },
        },
      );
      expect({ status: documented.status, stderr: documented.stderr }).toEqual({
        status: 0,
        stderr: "",
      });
      const plaintext = spawnSync(
        process.execPath,
        [
          "dist/cli/main.js",
          "--bootstrap",
          `${controller0.ip}:9090`,
          "cluster",
          "status",
          "--timeout-ms",
          "3000",
        ],
        {
          cwd: root,
          encoding: "utf8",
          timeout: CLI_TIMEOUT_MS,
          env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
        },
      );
      // Refused at the connection: the TLS listener never speaks HTTP/2 in the clear.
      expect({ status: plaintext.status, stdout: plaintext.stdout }).toEqual({
        status: 1,
        stdout: "",
      });
      expect(plaintext.stderr).toMatch(/NETWORK_EXCEPTION: No connection established/);

      // Rotation: cert-manager renews the broker Secret, the kubelet swaps ..data; the broker pods
      // serve the new certificate within the reload period, without a restart.
      const brokerCertificate = certificates.find((c) => roleOf(c) === "broker")!;
      const brokers = plans.filter((p) => p.statefulSet === "tern-broker");
      const renewed = issueForRole(
        ca,
        brokerCertificate,
        brokers.map((p) => p.ip),
        path.join(volumeRoot, "issuer"),
      );
      const renewedSerial = new X509Certificate(renewed["tls.crt"]!).serialNumber.toUpperCase();
      const before = await servedSerial(brokers[0]!.ip, 9190);
      expect(before).not.toBe(renewedSerial);
      for (const p of brokers) writeSecretVolume(secretDirOf(p), renewed);
      const deadlineMs = Date.now() + ROTATION_TIMEOUT_MS;
      const served = new Map<string, string>();
      while (
        Date.now() < deadlineMs &&
        brokers.some((p) => served.get(p.podName) !== renewedSerial)
      ) {
        for (const p of brokers)
          served.set(p.podName, await servedSerial(p.ip, 9190).catch((e: Error) => e.message));
        if (brokers.some((p) => served.get(p.podName) !== renewedSerial))
          await new Promise((r) => setTimeout(r, POLL_MS));
      }
      expect(Object.fromEntries(served)).toEqual(
        Object.fromEntries(brokers.map((p) => [p.podName, renewedSerial])),
      );
      const brokerPods = pods.filter((p) => p.plan.statefulSet === "tern-broker");
      expect(brokerPods.map((p) => p.exit())).toEqual([undefined, undefined, undefined]);
      expect(readFileSync(brokerPods[0]!.logFile, "utf8")).toMatch(/TLS certificate reloaded/);
      expect(await checkHealth(`${brokers[0]!.ip}:9190`, { timeoutMs: 5_000 })).toBe("SERVING");

      const terminations = await Promise.all(pods.map((pod) => terminatePod(pod)));
      for (const t of terminations)
        expect(t, t.pod).toMatchObject({ killed: false, exit: { code: 0, signal: null } });
    },
    TEST_TIMEOUT_MS,
  );
});

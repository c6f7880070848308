// The manifests and the binaries agree: every pod of the rendered StatefulSets is started as
// a local process with the container's command, args and environment (pod DNS names mapped
// to per-pod loopback addresses, volumes to temp dirs); the cluster must form, every probe
// pass, /metrics answer where the pod annotations say, and SIGTERM end each pod with exit 0
// within its grace period. A broken manifest must fail the same path.
// Needs the build (npm test runs it first): node dist/services/<role>/main.js.
import { afterAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { silentLogger } from "../../libs/common/logger.js";
import { until } from "../../libs/common/poll.js";
import { ControllerClient } from "../../libs/metadata/controller-client.js";
import type { ClusterMetadata } from "../../libs/metadata/types.js";
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
import { serviceEndpoints } from "../../scripts/k8s/service-endpoints.js";
import { repoRoot } from "../../scripts/k8s/repo-root.js";

const root = repoRoot();
// Generous bounds: nine Node processes share two cores with everything else running.
const PROBES_TIMEOUT_MS = 180_000;
const FORM_TIMEOUT_MS = 60_000;
const METRICS_TIMEOUT_MS = 30_000;
const TEST_TIMEOUT_MS = 420_000;
const POLL_MS = 250;
const CLI_TIMEOUT_MS = 30_000;
// A /24 of loopback per test run, so parallel runs and the local cluster (127.0.0.1) never clash.
const SUBNET = 20 + (process.pid % 200);

const running: RunningPod[] = [];
const tempDirs: string[] = [];

afterAll(async () => {
  for (const pod of running) if (pod.exit() === undefined) pod.child.kill("SIGKILL");
  await Promise.all(running.map((p) => p.exited));
  // TERN_K8S_KEEP=1 keeps the pods' data and logs for a post-mortem.
  if (process.env.TERN_K8S_KEEP === "1") console.error(`kept: ${tempDirs.join(" ")}`);
  else for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

function plan(dir: string, octet: number, only?: string[]): PodPlan[] {
  const volumeRoot = mkdtempSync(path.join(tmpdir(), "tern-k8s-start-"));
  tempDirs.push(volumeRoot);
  return planPods({
    objects: renderObjects(dir),
    image: imageDefaults(readFileSync(path.join(root, "Dockerfile"), "utf8")),
    appDir: root,
    volumeRoot,
    ipFor: (i) => `127.${octet}.${SUBNET}.${i + 1}`,
    hostEnv: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
    ...(only === undefined ? {} : { only }),
  });
}

function start(plans: readonly PodPlan[]): RunningPod[] {
  for (const p of plans) {
    const script = path.join(
      p.cwd,
      p.argv.find((a) => a.endsWith(".js")) ?? "(no script in the command)",
    );
    if (!existsSync(script)) throw new Error(`${script} is missing: run \`npm run build\` first`);
  }
  const logDir = path.join(tempDirs[tempDirs.length - 1]!, "logs");
  const pods = plans.map((p) => startPod(p, logDir));
  running.push(...pods);
  return pods;
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

/** The argv of the CLI command docs/deploy-k8s.md tells users to run in a pod. */
function documentedCliCommand(): string[] {
  const doc = readFileSync(path.join(root, "docs/deploy-k8s.md"), "utf8");
  const m = /"command":(\[[^\]]*dist\/cli\/main\.js[^\]]*\])/.exec(doc);
  if (m === null) throw new Error("docs/deploy-k8s.md has no CLI command");
  return JSON.parse(m[1]!) as string[];
}

/** GET with retries until a 200 or the deadline; the body, or the last failure as text. */
async function fetchTextWithin(url: string, timeoutMs: number): Promise<string> {
  const deadlineMs = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadlineMs) {
    try {
      const response = await fetch(url, {
        signal: AbortSignal.timeout(Math.max(1_000, deadlineMs - Date.now())),
      });
      if (response.status === 200) return await response.text();
      last = `HTTP ${response.status}`;
    } catch (e) {
      last = (e as Error).message;
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  return `no answer from ${url}: ${last}`;
}

describe("manifest-driven start", () => {
  it(
    "the rendered pods start, form a cluster, pass their probes and stop cleanly on SIGTERM",
    async () => {
      const plans = plan(path.join(root, "deploy/k8s-plaintext"), 44);
      expect(plans).toHaveLength(9);
      const pods = start(plans);

      const probes = await waitForProbes(
        pods,
        ["startup", "readiness", "liveness"],
        PROBES_TIMEOUT_MS,
      );
      expect(probes.exited, JSON.stringify(probes.exited)).toEqual([]);
      const failing = pods.filter((p) =>
        Object.values(probes.answers[p.plan.podName] ?? {}).some((a) => a !== "SERVING"),
      );
      expect(
        probes.passed,
        JSON.stringify(probes.answers) +
          failing.map((p) => `\n--- ${p.plan.podName}:\n${logTail(p)}`).join(""),
      ).toBe(true);

      // The pods found each other through the advertised (DNS-mapped) addresses.
      const controllers = plans
        .filter((p) => p.statefulSet === "tern-controller")
        .map((p) => ({ id: p.ordinal, host: p.ip, port: 9090 }));
      const client = new ControllerClient({
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
        expect(metadata?.controllerLeader).toBeGreaterThanOrEqual(0);
        expect(seen(metadata!)).toEqual(expected);
      } finally {
        client.close();
      }

      // docs/deploy-k8s.md's own CLI command works through the tern-bootstrap Service: run it
      // against every pod the Service selects (it may route to any of them).
      const docCommand = documentedCliCommand();
      const bootstrapAt = docCommand.indexOf("--bootstrap") + 1;
      const [serviceHost, servicePort] = docCommand[bootstrapAt]!.split(":");
      expect(serviceHost).toBe("tern-bootstrap");
      const endpoints = serviceEndpoints(
        renderObjects(path.join(root, "deploy/k8s-plaintext")),
        plans,
        serviceHost!,
        Number(servicePort),
      );
      expect(endpoints.length).toBeGreaterThan(0);
      for (const e of endpoints) {
        const argv = docCommand.map((a, i) => (i === bootstrapAt ? e.address : a));
        const run = spawnSync(argv[0] === "node" ? process.execPath : argv[0]!, argv.slice(1), {
          cwd: root,
          encoding: "utf8",
          timeout: CLI_TIMEOUT_MS,
        });
        expect({ pod: e.podName, status: run.status, stderr: run.stderr }).toMatchObject({
          pod: e.podName,
          status: 0,
          stderr: "",
        });
        expect(run.stdout, e.podName).toMatch(/controller/i);
      }

      // Prometheus finds metrics where the pod template annotations point.
      for (const p of plans) {
        const port = p.env.TERN_METRICS_LISTEN!.split(":")[1];
        expect(port, p.podName).toBe(p.annotations["prometheus.io/port"]);
        const text = await fetchTextWithin(
          `http://${p.ip}:${port}${p.annotations["prometheus.io/path"]}`,
          METRICS_TIMEOUT_MS,
        );
        expect(text, p.podName).toMatch(/process_cpu_seconds_total/);
      }

      const terminations = await Promise.all(pods.map((pod) => terminatePod(pod)));
      for (const t of terminations) {
        expect(t, t.pod).toMatchObject({ killed: false, exit: { code: 0, signal: null } });
      }
    },
    TEST_TIMEOUT_MS,
  );

  it(
    "a broken manifest (an unknown flag in args) fails the same path, with the service's reason",
    async () => {
      const plans = plan(path.join(root, "test/k8s/fixtures/bad-flag"), 45, ["tern-controller"]);
      const pods = start(plans);
      const probes = await waitForProbes(pods, ["startup", "readiness"], PROBES_TIMEOUT_MS);
      expect(probes.passed).toBe(false);
      expect(probes.exited.length).toBeGreaterThan(0);
      expect(probes.exited[0]!.exit.code).not.toBe(0);
      expect(probes.exited[0]!.log).toMatch(/log-levle/);
    },
    TEST_TIMEOUT_MS,
  );
});

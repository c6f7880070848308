// Runs planned pods as local processes and plays the kubelet's part: probes (grpc.health.v1,
// HTTP GET, TCP), and the termination path (preStop sleep, SIGTERM, SIGKILL after the grace
// period). Every wait is bounded.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, openSync, closeSync, readFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { checkHealth } from "../../libs/server/health-client.js";
import type { PodPlan, ProbePlan } from "./pod-plan.js";

export interface PodExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

export interface RunningPod {
  readonly plan: PodPlan;
  readonly child: ChildProcess;
  readonly logFile: string;
  readonly exited: Promise<PodExit>;
  exit(): PodExit | undefined;
}

const LOG_TAIL_CHARS = 2_000;
const PROBE_POLL_MS = 250;

export function startPod(plan: PodPlan, logDir: string): RunningPod {
  for (const dir of plan.volumeDirs) mkdirSync(dir, { recursive: true });
  mkdirSync(logDir, { recursive: true });
  const logFile = path.join(logDir, `${plan.podName}.log`);
  const fd = openSync(logFile, "a");
  const child = spawn(plan.argv[0]!, plan.argv.slice(1), {
    cwd: plan.cwd,
    env: { ...plan.env },
    stdio: ["ignore", fd, fd],
  });
  closeSync(fd);
  let result: PodExit | undefined;
  const exited = new Promise<PodExit>((resolve) => {
    child.once("exit", (code, signal) => {
      result = { code, signal };
      resolve(result);
    });
    child.once("error", () => {
      result = { code: null, signal: null };
      resolve(result);
    });
  });
  return { plan, child, logFile, exited, exit: () => result };
}

export function logTail(pod: RunningPod): string {
  try {
    return readFileSync(pod.logFile, "utf8").slice(-LOG_TAIL_CHARS);
  } catch {
    return "";
  }
}

/** One probe attempt, as the kubelet makes it: success or not, within timeoutSeconds. */
export async function runProbe(probe: ProbePlan): Promise<{ ok: boolean; answer: string }> {
  const timeoutMs = probe.timeoutSeconds * 1000;
  if (probe.type === "grpc") {
    const answer = await checkHealth(`${probe.host}:${probe.port}`, {
      service: probe.target,
      timeoutMs,
    });
    return { ok: answer === "SERVING", answer };
  }
  if (probe.type === "http") {
    try {
      const response = await fetch(`http://${probe.host}:${probe.port}${probe.target}`, {
        signal: AbortSignal.timeout(timeoutMs),
      });
      return {
        ok: response.status >= 200 && response.status < 400,
        answer: `HTTP ${response.status}`,
      };
    } catch (e) {
      return { ok: false, answer: (e as Error).message };
    }
  }
  return new Promise((resolve) => {
    const socket = net.connect({ host: probe.host, port: probe.port });
    const done = (ok: boolean, answer: string) => {
      socket.destroy();
      resolve({ ok, answer });
    };
    socket.setTimeout(timeoutMs, () => done(false, "timeout"));
    socket.once("connect", () => done(true, "connected"));
    socket.once("error", (e) => done(false, e.message));
  });
}

export interface ProbeWait {
  readonly passed: boolean;
  /** Per pod: the last answer of each probe kind waited for. */
  readonly answers: Record<string, Record<string, string>>;
  /** Pods that exited while waited on, with their exit and log tail. */
  readonly exited: Array<{ pod: string; exit: PodExit; log: string }>;
}

/** Polls the given probe kinds of every pod until all pass, a pod exits, or timeoutMs passes. */
export async function waitForProbes(
  pods: readonly RunningPod[],
  kinds: ReadonlyArray<ProbePlan["kind"]>,
  timeoutMs: number,
): Promise<ProbeWait> {
  const deadlineMs = Date.now() + timeoutMs;
  const answers: Record<string, Record<string, string>> = {};
  const passed = new Set<string>();
  const probes = pods.flatMap((pod) =>
    pod.plan.probes
      .filter((p) => kinds.includes(p.kind))
      .map((probe) => ({ pod, probe, key: `${pod.plan.podName}/${probe.kind}` })),
  );
  while (true) {
    const exited = pods
      .filter((p) => p.exit() !== undefined)
      .map((p) => ({ pod: p.plan.podName, exit: p.exit()!, log: logTail(p) }));
    if (exited.length > 0) return { passed: false, answers, exited };
    await Promise.all(
      probes
        .filter((p) => !passed.has(p.key))
        .map(async ({ pod, probe, key }) => {
          const result = await runProbe(probe);
          (answers[pod.plan.podName] ??= {})[probe.kind] = result.answer;
          if (result.ok) passed.add(key);
        }),
    );
    if (passed.size === probes.length) return { passed: true, answers, exited: [] };
    if (Date.now() >= deadlineMs) return { passed: false, answers, exited: [] };
    await new Promise((r) => setTimeout(r, PROBE_POLL_MS));
  }
}

export interface Termination {
  readonly pod: string;
  readonly exit: PodExit;
  /** True when the grace period ran out and the pod was SIGKILLed. */
  readonly killed: boolean;
  readonly elapsedMs: number;
}

/** The kubelet's termination: preStop sleep, SIGTERM, then SIGKILL when the grace period ends. */
export async function terminatePod(pod: RunningPod): Promise<Termination> {
  const startMs = Date.now();
  const graceMs = pod.plan.terminationGracePeriodSeconds * 1000;
  if (pod.exit() === undefined && pod.plan.preStopSleepSeconds > 0) {
    await Promise.race([
      pod.exited,
      new Promise((r) => setTimeout(r, pod.plan.preStopSleepSeconds * 1000)),
    ]);
  }
  if (pod.exit() === undefined) pod.child.kill("SIGTERM");
  let timer: NodeJS.Timeout | undefined;
  const killedAfterGrace = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(true), Math.max(0, graceMs - (Date.now() - startMs)));
  });
  const killed = await Promise.race([pod.exited.then(() => false), killedAfterGrace]);
  clearTimeout(timer);
  if (killed) pod.child.kill("SIGKILL");
  const exit = await pod.exited;
  return { pod: pod.plan.podName, exit, killed, elapsedMs: Date.now() - startMs };
}

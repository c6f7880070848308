// Starting and stopping service processes by pid, every wait a bounded poll. Works for
// children of this process and for detached processes started by an earlier `cluster up`.
import { spawn } from "node:child_process";
import { closeSync, existsSync, mkdirSync, openSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { Role } from "../../libs/common/config.js";
import { serviceArgs, type ProcessSpec } from "./layout.js";
import { NODE_PROCESS_FLAGS } from "../../libs/common/node-flags.js";

const POLL_INTERVAL_MS = 50;
const PARENT_LEVELS_MAX = 8;

/** dist/ of this repository, whether this module runs from dist/ or from source (vitest). */
export function distRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let level = 0; level < PARENT_LEVELS_MAX; level++) {
    if (dir.endsWith("/dist") || dir.endsWith("\\dist")) return dir;
    if (existsSync(join(dir, "package.json"))) return join(dir, "dist");
    dir = dirname(dir);
  }
  throw new Error(`cannot find the repository's dist/ above ${fileURLToPath(import.meta.url)}`);
}

export function serviceMainPath(role: Role): string {
  return join(distRoot(), "services", role, "main.js");
}

/** True when pid is a live (not zombie) process. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
    return state !== "Z" && state !== "X";
  } catch {
    return true; // no /proc (not Linux): kill(0) said it exists
  }
}

export function signalProcess(pid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}

export interface SpawnedService {
  readonly pid: number;
  /** Resolves with the exit code (or signal name) when the process ends. */
  readonly exited: Promise<number | string>;
}

/**
 * Starts one service detached (its own process group, stdout+stderr appended to its log
 * file) so it outlives a `cluster up` that started it.
 */
export function spawnService(
  spec: ProcessSpec,
  controllers: string,
  env: NodeJS.ProcessEnv,
  extraArgs: readonly string[] = [],
): SpawnedService {
  const main = serviceMainPath(spec.role);
  if (!existsSync(main)) throw new Error(`${main} is missing: run npm run build first`);
  mkdirSync(dirname(spec.logFile), { recursive: true });
  const logFd = openSync(spec.logFile, "a");
  // TERN_NODE_EXEC_ARGV="--cpu-prof --cpu-prof-dir=/tmp/prof" profiles every service process
  // (Node refuses --cpu-prof in NODE_OPTIONS).
  const execArgv = (process.env.TERN_NODE_EXEC_ARGV ?? "").split(" ").filter((a) => a.length > 0);
  try {
    const child = spawn(
      process.execPath,
      [...NODE_PROCESS_FLAGS, ...execArgv, main, ...serviceArgs(spec, controllers), ...extraArgs],
      {
        detached: true,
        stdio: ["ignore", logFd, logFd],
        env: { ...process.env, ...env },
      },
    );
    if (child.pid === undefined) throw new Error(`failed to start ${spec.role} ${spec.id}`);
    const exited = new Promise<number | string>((resolveExit) => {
      child.once("exit", (code, signal) => resolveExit(code ?? signal ?? "unknown"));
      child.once("error", () => resolveExit("spawn-error"));
    });
    child.unref();
    return { pid: child.pid, exited };
  } finally {
    closeSync(logFd);
  }
}

/** Polls until none of pids is alive or timeoutMs passes; returns those still alive. */
export async function waitForExit(pids: readonly number[], timeoutMs: number): Promise<number[]> {
  const deadlineMs = Date.now() + timeoutMs;
  let alive = pids.filter(processAlive);
  while (alive.length > 0 && Date.now() < deadlineMs) {
    await new Promise((r) => setTimeout(r, POLL_INTERVAL_MS));
    alive = alive.filter(processAlive);
  }
  return alive;
}

export interface TerminateResult {
  /** Processes that ignored SIGTERM within the bound and were killed. */
  readonly killed: number[];
  /** Processes still alive even after SIGKILL (should never happen). */
  readonly survivors: number[];
}

/** SIGTERM, wait up to termTimeoutMs, then SIGKILL and wait up to killTimeoutMs. */
export async function terminate(
  pids: readonly number[],
  options: { termTimeoutMs: number; killTimeoutMs?: number },
): Promise<TerminateResult> {
  for (const pid of pids) signalProcess(pid, "SIGTERM");
  // A stopped (SIGSTOP) process never handles SIGTERM until continued.
  for (const pid of pids) signalProcess(pid, "SIGCONT");
  const stubborn = await waitForExit(pids, options.termTimeoutMs);
  for (const pid of stubborn) signalProcess(pid, "SIGKILL");
  const survivors = await waitForExit(stubborn, options.killTimeoutMs ?? 5_000);
  return { killed: stubborn, survivors };
}

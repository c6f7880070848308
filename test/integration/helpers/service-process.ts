// Real service processes for integration tests: `node dist/services/<role>/main.js ...` with
// captured output, every wait bounded.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import type { Role } from "../../../libs/common/config.js";
import { serviceMainPath } from "../../../scripts/cluster/process-control.js";

export interface ServiceProcess {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves with {code, signal} when it exits, or undefined after timeoutMs. */
  waitExit(
    timeoutMs: number,
  ): Promise<{ code: number | null; signal: NodeJS.Signals | null } | undefined>;
}

/** Fails with a clear message when the build is missing (npm test builds first). */
export function requireBuild(role: Role): string {
  const main = serviceMainPath(role);
  if (!existsSync(main))
    throw new Error(`${main} is missing: run \`npm run build\` before the integration tests`);
  return main;
}

export function spawnServiceProcess(
  role: Role,
  args: readonly string[],
  env: NodeJS.ProcessEnv = {},
): ServiceProcess {
  const child = spawn(process.execPath, [requireBuild(role), ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { PATH: process.env.PATH, ...env },
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (err += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>(
    (resolveExit) => {
      child.once("close", (code, signal) => resolveExit({ code, signal }));
    },
  );
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    waitExit: (timeoutMs) =>
      Promise.race([
        exited,
        new Promise<undefined>((r) => setTimeout(() => r(undefined), timeoutMs).unref()),
      ]),
  };
}

/** Runs a process that is expected to stop by itself; kills it if it outlives timeoutMs. */
export async function runToExit(
  role: Role,
  args: readonly string[],
  timeoutMs: number,
  env: NodeJS.ProcessEnv = {},
) {
  const p = spawnServiceProcess(role, args, env);
  const result = await p.waitExit(timeoutMs);
  if (!result) p.child.kill("SIGKILL");
  return {
    code: result?.code ?? null,
    signal: result?.signal ?? null,
    stdout: p.stdout(),
    stderr: p.stderr(),
  };
}

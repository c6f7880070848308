// Runs the tern command-line tool (`node dist/cli/main.js`, as users run it) to completion,
// bounded; `okCli` also requires exit code 0.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { distRoot } from "../../../scripts/cluster/process-control.js";

export interface TernRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

const CLI_TIMEOUT_MS_DEFAULT = 60_000;

export function ternCli(
  bootstrap: string,
  args: readonly string[],
  options: { stdin?: string; timeoutMs?: number } = {},
): Promise<TernRun> {
  const full = ["--bootstrap", bootstrap, ...args];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(distRoot(), "cli", "main.js"), ...full], {
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`tern ${full.join(" ")} timed out; stderr: ${stderr}`));
    }, options.timeoutMs ?? CLI_TIMEOUT_MS_DEFAULT);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(options.stdin ?? "");
  });
}

export async function okCli(
  bootstrap: string,
  args: readonly string[],
  options?: { stdin?: string; timeoutMs?: number },
): Promise<TernRun> {
  const r = await ternCli(bootstrap, args, options);
  if (r.code !== 0) throw new Error(`tern ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return r;
}

// Runs `node dist/scripts/cluster.js ...` to completion, bounded.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { distRoot } from "../../../scripts/cluster/process-control.js";

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function clusterCli(args: readonly string[], timeoutMs: number): Promise<CliResult> {
  const script = join(distRoot(), "scripts", "cluster.js");
  if (!existsSync(script)) throw new Error(`${script} is missing: run \`npm run build\` first`);
  return new Promise((resolveRun) => {
    execFile(
      process.execPath,
      [script, ...args],
      { timeout: timeoutMs, killSignal: "SIGKILL" },
      (err, stdout, stderr) => {
        const code = err
          ? typeof (err as { code?: unknown }).code === "number"
            ? (err as { code: number }).code
            : null
          : 0;
        resolveRun({ code, stdout, stderr });
      },
    );
  });
}

// Crash points for real-process tests: TERN_FAILPOINTS="name,other=3" arms them. failpoint(name)
// kills this process with SIGKILL (no cleanup, like a power cut) at the first hit, or at the
// k-th hit for "name=k". Unarmed failpoints cost one map lookup. With TERN_FAILPOINTS_ONCE_DIR
// set, a failpoint is armed only while the file <dir>/<name> is absent, and the first process to
// reach it creates the file and dies: a whole cluster shares one environment, a test arms one
// failpoint by deleting its file, and exactly one process is lost (restarts carry on).
import { closeSync, existsSync, openSync } from "node:fs";
import { join } from "node:path";

const armed = parse(process.env.TERN_FAILPOINTS ?? "");
const hits = new Map<string, number>();

function parse(spec: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const part of spec
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0)) {
    const m = /^([\w.-]+)(?:=(\d+))?$/.exec(part);
    if (!m) throw new Error(`TERN_FAILPOINTS: cannot parse "${part}" (expected name or name=k)`);
    out.set(m[1]!, m[2] === undefined ? 1 : Math.max(1, Number(m[2])));
  }
  return out;
}

export function failpoint(name: string): void {
  const after = armed.get(name);
  if (after === undefined) return;
  const onceDir = process.env.TERN_FAILPOINTS_ONCE_DIR;
  const once = onceDir !== undefined && onceDir !== "";
  // With a once-directory, an existing file disarms the failpoint (tests arm it by deleting it).
  if (once && existsSync(join(onceDir, name))) return;
  const count = (hits.get(name) ?? 0) + 1;
  hits.set(name, count);
  if (count < after) return;
  hits.delete(name);
  if (once) {
    try {
      closeSync(openSync(join(onceDir, name), "wx"));
    } catch {
      return; // another process fired it first
    }
  }
  // Synchronous write so the line reaches the log before the kill.
  process.stderr.write(
    `${JSON.stringify({ level: 60, msg: "failpoint hit: SIGKILL", failpoint: name, hit: count, pid: process.pid })}\n`,
  );
  process.kill(process.pid, "SIGKILL");
}

/** Whether any failpoint is armed in this process (for logs at start). */
export function armedFailpoints(): string[] {
  return [...armed.entries()].map(([n, k]) => (k === 1 ? n : `${n}=${k}`));
}

/**
 * A planted fault rather than a crash: code asks whether `name` is armed (same TERN_FAILPOINTS,
 * same once-directory disarming) and misbehaves on purpose, so that a checker can be shown to
 * catch it (test/integration/verify.test.ts). Never armed unless the environment names it.
 */
export function faultArmed(name: string): boolean {
  if (!armed.has(name)) return false;
  const onceDir = process.env.TERN_FAILPOINTS_ONCE_DIR;
  return onceDir === undefined || onceDir === "" || !existsSync(join(onceDir, name));
}

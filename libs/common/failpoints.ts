// Crash points for real-process tests: TERN_FAILPOINTS="name,other=3" arms them. failpoint(name)
// kills this process with SIGKILL (no cleanup, like a power cut) at the first hit, or at the
// k-th hit for "name=k". Unarmed failpoints cost one map lookup. With TERN_FAILPOINTS_ONCE_DIR
// set, a failpoint is armed only while the file <dir>/<name> is absent, and the first process to
// reach it creates the file and dies: a whole cluster shares one environment, a test arms one
// failpoint by deleting its file, and exactly one process is lost (restarts carry on).
// failpointHold(name) delays instead of killing (a stalled step, not a crash).
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

/**
 * Whether the armed failpoint `name` fires at this hit: its k-th hit, and with a once-directory
 * only while its file is absent, created by the first process to fire it.
 */
function fires(name: string): { hit: number } | undefined {
  const after = armed.get(name);
  if (after === undefined) return undefined;
  const onceDir = process.env.TERN_FAILPOINTS_ONCE_DIR;
  const once = onceDir !== undefined && onceDir !== "";
  // With a once-directory, an existing file disarms the failpoint (tests arm it by deleting it).
  if (once && existsSync(join(onceDir, name))) return undefined;
  const count = (hits.get(name) ?? 0) + 1;
  hits.set(name, count);
  if (count < after) return undefined;
  hits.delete(name);
  if (once) {
    try {
      closeSync(openSync(join(onceDir, name), "wx"));
    } catch {
      return undefined; // another process fired it first
    }
  }
  return { hit: count };
}

export function failpoint(name: string): void {
  const fired = fires(name);
  if (fired === undefined) return;
  // Synchronous write so the line reaches the log before the kill.
  process.stderr.write(
    `${JSON.stringify({ level: 60, msg: "failpoint hit: SIGKILL", failpoint: name, hit: fired.hit, pid: process.pid })}\n`,
  );
  process.kill(process.pid, "SIGKILL");
}

/** How long a hold failpoint holds; TERN_FAILPOINT_HOLD_MS overrides it. */
export const FAILPOINT_HOLD_MS_DEFAULT = 10_000;

/**
 * A delay rather than a crash (same TERN_FAILPOINTS, same once-directory): when the armed
 * failpoint `name` fires, a promise that settles after TERN_FAILPOINT_HOLD_MS (default 10 s);
 * otherwise undefined, synchronously, so that the caller keeps its ordering when nothing is
 * held. Unarmed it costs one map lookup.
 */
export function failpointHold(name: string): Promise<void> | undefined {
  const fired = fires(name);
  if (fired === undefined) return undefined;
  const holdMs = Number(process.env.TERN_FAILPOINT_HOLD_MS ?? FAILPOINT_HOLD_MS_DEFAULT);
  process.stderr.write(
    `${JSON.stringify({ level: 40, msg: "failpoint hit: hold", failpoint: name, hit: fired.hit, holdMs, pid: process.pid })}\n`,
  );
  return new Promise((resolve) => setTimeout(resolve, holdMs));
}

/** Whether TERN_FAILPOINTS names `name` (a once-directory may still disarm it at run time). */
export function failpointListed(name: string): boolean {
  return armed.has(name);
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

// Crash points for real-process tests: TERN_FAILPOINTS="name,other=3" arms them. failpoint(name)
// kills this process with SIGKILL (no cleanup, like a power cut) at the first hit, or at the
// k-th hit for "name=k". Unarmed failpoints cost one map lookup. With TERN_FAILPOINTS_ONCE_DIR
// set, each failpoint fires once across every process sharing that directory (the first to
// create the file <dir>/<name> dies; the others, and restarts, carry on): a whole cluster can be
// armed with one environment and lose exactly one process.
import { closeSync, openSync } from "node:fs";
import { join } from "node:path";

const armed = parse(process.env.TERN_FAILPOINTS ?? "");
const hits = new Map<string, number>();

function parse(spec: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const part of spec.split(",").map((s) => s.trim()).filter((s) => s.length > 0)) {
    const m = /^([\w.-]+)(?:=(\d+))?$/.exec(part);
    if (!m) throw new Error(`TERN_FAILPOINTS: cannot parse "${part}" (expected name or name=k)`);
    out.set(m[1]!, m[2] === undefined ? 1 : Math.max(1, Number(m[2])));
  }
  return out;
}

export function failpoint(name: string): void {
  const after = armed.get(name);
  if (after === undefined) return;
  const count = (hits.get(name) ?? 0) + 1;
  hits.set(name, count);
  if (count < after) return;
  armed.delete(name);
  const onceDir = process.env.TERN_FAILPOINTS_ONCE_DIR;
  if (onceDir !== undefined && onceDir !== "") {
    try {
      closeSync(openSync(join(onceDir, name), "wx"));
    } catch {
      return; // another process (or an earlier life of this one) already fired it
    }
  }
  // Synchronous write so the line reaches the log before the kill.
  process.stderr.write(`${JSON.stringify({ level: 60, msg: "failpoint hit: SIGKILL", failpoint: name, hit: count, pid: process.pid })}\n`);
  process.kill(process.pid, "SIGKILL");
}

/** Whether any failpoint is armed in this process (for logs at start). */
export function armedFailpoints(): string[] {
  return [...armed.entries()].map(([n, k]) => (k === 1 ? n : `${n}=${k}`));
}

// Crash points for real-process tests: TERN_FAILPOINTS="name,other=3" arms them. crash(name)
// kills this process with SIGKILL (no cleanup, like a power cut) at the first hit, or at the
// k-th hit for "name=k". Unarmed failpoints cost one map lookup. With TERN_FAILPOINTS_ONCE_DIR
// set, a failpoint is armed only while the file <dir>/<name> is absent, and the first process to
// reach it creates the file and dies: a whole cluster shares one environment, a test arms one
// failpoint by deleting its file, and exactly one process is lost (restarts carry on).
// hold(name) delays instead of killing (a stalled step, not a crash); faultArmed(name) plants a
// fault. One Failpoints per process, read from its environment when the process runtime is
// built (libs/runtime/system-runtime.ts): its hit counts are that process's. A process whose
// TERN_FAILPOINTS lists none has none, and its parts skip every failpoint without a call.
import { closeSync, existsSync, openSync } from "node:fs";
import { join } from "node:path";

/** How long a hold failpoint holds; TERN_FAILPOINT_HOLD_MS overrides it. */
export const FAILPOINT_HOLD_MS_DEFAULT = 10_000;

export class Failpoints {
  /** Hits of each armed failpoint so far (towards its k-th). */
  private readonly hits = new Map<string, number>();

  /**
   * `armed`: failpoint → the hit it fires at; `onceDir`: TERN_FAILPOINTS_ONCE_DIR; `holdMs`: how
   * long hold() holds. The default arms nothing.
   */
  constructor(
    private readonly armed: ReadonlyMap<string, number> = new Map(),
    private readonly onceDir: string | undefined = undefined,
    private readonly holdMs: number = FAILPOINT_HOLD_MS_DEFAULT,
  ) {}

  /**
   * TERN_FAILPOINTS, TERN_FAILPOINTS_ONCE_DIR and TERN_FAILPOINT_HOLD_MS; undefined when the list
   * names none. Throws on a list it cannot parse.
   */
  static fromEnv(env: NodeJS.ProcessEnv): Failpoints | undefined {
    const armed = parse(env.TERN_FAILPOINTS ?? "");
    if (armed.size === 0) return undefined;
    const onceDir = env.TERN_FAILPOINTS_ONCE_DIR;
    return new Failpoints(
      armed,
      onceDir === undefined || onceDir === "" ? undefined : onceDir,
      Number(env.TERN_FAILPOINT_HOLD_MS ?? FAILPOINT_HOLD_MS_DEFAULT),
    );
  }

  /** Kills this process with SIGKILL when the armed failpoint `name` fires. */
  crash(name: string): void {
    const fired = this.fires(name);
    if (fired === undefined) return;
    // Synchronous write so the line reaches the log before the kill.
    process.stderr.write(
      `${JSON.stringify({ level: 60, msg: "failpoint hit: SIGKILL", failpoint: name, hit: fired.hit, pid: process.pid })}\n`,
    );
    process.kill(process.pid, "SIGKILL");
  }

  /**
   * A delay rather than a crash: when the armed failpoint `name` fires, a promise that settles
   * after the hold (TERN_FAILPOINT_HOLD_MS, default 10 s); otherwise undefined, synchronously,
   * so that the caller keeps its ordering when nothing is held. Unarmed it costs one map lookup.
   */
  hold(name: string): Promise<void> | undefined {
    const fired = this.fires(name);
    if (fired === undefined) return undefined;
    const holdMs = this.holdMs;
    process.stderr.write(
      `${JSON.stringify({ level: 40, msg: "failpoint hit: hold", failpoint: name, hit: fired.hit, holdMs, pid: process.pid })}\n`,
    );
    return new Promise((resolve) => setTimeout(resolve, holdMs));
  }

  /**
   * A planted fault rather than a crash: code asks whether `name` is armed (the once-directory
   * disarms it as it does a crash) and misbehaves on purpose, so that a checker can be shown to
   * catch it (test/integration/verify.test.ts). Never armed unless the environment names it.
   */
  faultArmed(name: string): boolean {
    if (!this.armed.has(name)) return false;
    return this.onceDir === undefined || !existsSync(join(this.onceDir, name));
  }

  /** Whether TERN_FAILPOINTS names `name` (a once-directory may still disarm it at run time). */
  listed(name: string): boolean {
    return this.armed.has(name);
  }

  /** The failpoints TERN_FAILPOINTS names, as written there (for logs at start). */
  list(): string[] {
    return [...this.armed.entries()].map(([n, k]) => (k === 1 ? n : `${n}=${k}`));
  }

  /**
   * Whether the armed failpoint `name` fires at this hit: its k-th hit, and with a
   * once-directory only while its file is absent, created by the first process to fire it.
   */
  private fires(name: string): { hit: number } | undefined {
    const after = this.armed.get(name);
    if (after === undefined) return undefined;
    const onceDir = this.onceDir;
    // With a once-directory, an existing file disarms the failpoint (tests arm it by deleting it).
    if (onceDir !== undefined && existsSync(join(onceDir, name))) return undefined;
    const count = (this.hits.get(name) ?? 0) + 1;
    this.hits.set(name, count);
    if (count < after) return undefined;
    this.hits.delete(name);
    if (onceDir !== undefined) {
      try {
        closeSync(openSync(join(onceDir, name), "wx"));
      } catch {
        return undefined; // another process fired it first
      }
    }
    return { hit: count };
  }
}

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

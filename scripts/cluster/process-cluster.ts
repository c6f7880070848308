// A cluster of real service processes for integration tests, chaos runs, benchmarks and the
// `cluster` script: start, SIGKILL/SIGSTOP any process, restart it from the same data dir,
// wait for health, stop everything. Every wait is a bounded poll.
import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import type { Role } from "../../libs/common/config.js";
import {
  checkHealth,
  waitForHealthStatus,
  type HealthAnswer,
} from "../../libs/server/health-client.js";
import {
  controllersFlag,
  DEFAULT_BASE_PORT,
  planCluster,
  type ClusterShape,
  type ProcessSpec,
} from "./layout.js";
import {
  processAlive,
  signalProcess,
  spawnService,
  terminate,
  waitForExit,
  type TerminateResult,
} from "./process-control.js";
import { writeRegistry, type RegisteredProcess } from "./registry.js";
import { useClientTlsFiles } from "../../libs/server/tls/credentials.js";
import type { ClientTlsFiles } from "../../libs/grpc/client-credentials.js";
import {
  ensureClusterCa,
  ensureProcessCertificate,
  hostOf,
  serviceTlsArgs,
  type ClusterTlsFiles,
} from "./tls-material.js";

export interface StartClusterOptions {
  readonly dataDir: string;
  readonly controllers?: number;
  readonly brokers?: number;
  readonly coordinators?: number;
  readonly basePort?: number;
  /** Extra environment for every process (e.g. TERN_LOG_LEVEL, TERN_ELECTION_TIMEOUT_MS). */
  readonly env?: NodeJS.ProcessEnv;
  /** Extra flags for every process. */
  readonly extraArgs?: readonly string[];
  /** Extra flags for one process (e.g. an --advertise address a test proxies). */
  readonly argsFor?: (spec: ProcessSpec) => readonly string[];
  /** When set, startCluster waits (bounded) for every process to answer SERVING. */
  readonly healthTimeoutMs?: number;
  /**
   * TLS on every listener and mutual TLS between the processes: a CA and per-process
   * certificates in <dataDir>/tls (kept when present), and this process's channels switched to
   * TLS with the client certificate (health checks, test clients). reloadMs: how often the
   * processes check their files for a rotated certificate.
   */
  readonly tls?: boolean | { readonly reloadMs?: number };
}

export interface ProcessState extends RegisteredProcess {
  readonly alive: boolean;
  /** Exit code or signal once the process has ended (for processes this object started). */
  readonly exit: number | string | undefined;
}

export interface HealthRow {
  readonly role: Role;
  readonly id: number;
  readonly pid: number;
  readonly alive: boolean;
  readonly address: string;
  readonly health: HealthAnswer;
}

const STOP_TERM_TIMEOUT_MS = 10_000;
const LOG_TAIL_LINES = 3;
const LOG_TAIL_LINE_CHARS_MAX = 300;
const HEALTH_CHECK_TIMEOUT_MS = 1_000;

export class ProcessCluster {
  private readonly byKey = new Map<
    string,
    { spec: ProcessSpec; pid: number; startedAt: string; exit: number | string | undefined }
  >();

  constructor(
    readonly dataDir: string,
    readonly basePort: number,
    readonly specs: readonly ProcessSpec[],
    private readonly env: NodeJS.ProcessEnv,
    private readonly extraArgs: readonly string[],
    /** The CA and client certificate when the cluster runs with TLS. */
    readonly tls?: ClusterTlsFiles,
    private readonly tlsReloadMs?: number,
    private readonly argsFor?: (spec: ProcessSpec) => readonly string[],
  ) {}

  /** What an SDK client of this cluster passes as its `tls` option (undefined: plaintext). */
  get clientTls(): ClientTlsFiles | undefined {
    if (!this.tls) return undefined;
    return {
      caFile: this.tls.caFile,
      certFile: this.tls.client.certFile,
      keyFile: this.tls.client.keyFile,
    };
  }

  /** Environment of one process on top of the shared one (the chaos suite's per-node clock offset file). */
  envOf: (spec: ProcessSpec) => NodeJS.ProcessEnv = () => ({});

  /** The flags that give one process its certificate (none without TLS). */
  tlsArgs(role: Role, id: number): string[] {
    if (!this.tls) return [];
    return serviceTlsArgs(
      this.tls,
      ensureProcessCertificate(this.tls, role, id, hostOf(this.spec(role, id).address)),
      this.tlsReloadMs,
    );
  }

  /** id@host:port,... of the controllers (what clients and services are given). */
  get controllers(): string {
    return controllersFlag(this.specs);
  }

  spec(role: Role, id: number): ProcessSpec {
    const spec = this.specs.find((s) => s.role === role && s.id === id);
    if (!spec) throw new Error(`no ${role} ${id} in this cluster`);
    return spec;
  }

  address(role: Role, id: number): string {
    return this.spec(role, id).address;
  }

  addresses(role: Role): string[] {
    return this.specs.filter((s) => s.role === role).map((s) => s.address);
  }

  pid(role: Role, id: number): number | undefined {
    return this.byKey.get(key(role, id))?.pid;
  }

  /** Starts (or starts again, from the same data dir) one process; it must not be running. */
  start(role: Role, id: number): number {
    const spec = this.spec(role, id);
    const current = this.byKey.get(key(role, id));
    if (current && processAlive(current.pid))
      throw new Error(`${role} ${id} is already running (pid ${current.pid})`);
    const spawned = spawnService(spec, this.controllers, { ...this.env, ...this.envOf(spec) }, [
      ...this.tlsArgs(role, id),
      ...this.extraArgs,
      ...(this.argsFor?.(spec) ?? []),
    ]);
    const entry = {
      spec,
      pid: spawned.pid,
      startedAt: new Date().toISOString(),
      exit: undefined as number | string | undefined,
    };
    this.byKey.set(key(role, id), entry);
    void spawned.exited.then((code) => {
      entry.exit = code;
    });
    this.saveRegistry();
    return spawned.pid;
  }

  startAll(): void {
    for (const spec of this.specs) this.start(spec.role, spec.id);
  }

  /** Sends a signal (SIGKILL to crash, SIGSTOP/SIGCONT to pause/resume, SIGTERM to stop). */
  kill(role: Role, id: number, signal: NodeJS.Signals = "SIGKILL"): boolean {
    const entry = this.byKey.get(key(role, id));
    return entry !== undefined && signalProcess(entry.pid, signal);
  }

  /** Waits (bounded) until the process has exited; true when it has. */
  async waitForExit(role: Role, id: number, timeoutMs: number): Promise<boolean> {
    const pid = this.pid(role, id);
    return pid === undefined || (await waitForExit([pid], timeoutMs)).length === 0;
  }

  /** Stops the process if alive (SIGTERM, then SIGKILL after the bound) and starts it again from its data dir. */
  async restart(role: Role, id: number, options: { termTimeoutMs?: number } = {}): Promise<number> {
    const pid = this.pid(role, id);
    if (pid !== undefined && processAlive(pid)) {
      const result = await terminate([pid], {
        termTimeoutMs: options.termTimeoutMs ?? STOP_TERM_TIMEOUT_MS,
      });
      if (result.survivors.length > 0)
        throw new Error(`${role} ${id} (pid ${pid}) survived SIGKILL`);
    }
    return this.start(role, id);
  }

  processes(): ProcessState[] {
    return [...this.byKey.values()].map(({ spec, pid, startedAt, exit }) => ({
      ...spec,
      pid,
      startedAt,
      exit,
      alive: processAlive(pid),
    }));
  }

  /** One health check of every started process. */
  async health(): Promise<HealthRow[]> {
    return Promise.all(
      this.processes().map(async (p) => ({
        role: p.role,
        id: p.id,
        pid: p.pid,
        alive: p.alive,
        address: p.address,
        health: p.alive
          ? await checkHealth(p.address, { timeoutMs: HEALTH_CHECK_TIMEOUT_MS })
          : ("unreachable" as const),
      })),
    );
  }

  /** Polls until every given process (default: all started) answers SERVING; throws with the laggards after timeoutMs. */
  async waitForHealth(options: {
    timeoutMs: number;
    only?: ReadonlyArray<{ role: Role; id: number }>;
  }): Promise<void> {
    const targets = (options.only ?? this.processes()).map((p) => this.spec(p.role, p.id));
    try {
      await waitForHealth(
        targets.map((t) => t.address),
        { timeoutMs: options.timeoutMs },
      );
    } catch (e) {
      const names = new Map(targets.map((t) => [t.address, `${t.role}-${t.id}`]));
      const message = (e as Error).message.replace(
        /(\S+:\d+)=/g,
        (m, address: string) => `${names.get(address) ?? address}=`,
      );
      throw new Error(`${message}\n${this.diagnose(targets)}`, { cause: e });
    }
  }

  /** For a failed wait: whether each target is alive or how it exited, and the end of its log. */
  private diagnose(targets: ReadonlyArray<{ role: Role; id: number; logFile: string }>): string {
    const states = new Map(this.processes().map((p) => [`${p.role}-${p.id}`, p]));
    return targets
      .map((t) => {
        const state = states.get(`${t.role}-${t.id}`);
        const status =
          state === undefined
            ? "not started"
            : state.alive
              ? `alive (pid ${state.pid})`
              : `exited ${String(state.exit ?? "?")}`;
        let tail: string;
        try {
          tail = readFileSync(t.logFile, "utf8")
            .trimEnd()
            .split("\n")
            .slice(-LOG_TAIL_LINES)
            .map((l) => `    ${l.slice(0, LOG_TAIL_LINE_CHARS_MAX)}`)
            .join("\n");
        } catch {
          tail = "    (no log)";
        }
        return `  ${t.role}-${t.id}: ${status}\n${tail}`;
      })
      .join("\n");
  }

  /** SIGTERM everything, SIGKILL what is left after termTimeoutMs; verifies no process remains. */
  async stop(options: { termTimeoutMs?: number } = {}): Promise<TerminateResult> {
    const pids = this.processes()
      .filter((p) => p.alive)
      .map((p) => p.pid);
    const result = await terminate(pids, {
      termTimeoutMs: options.termTimeoutMs ?? STOP_TERM_TIMEOUT_MS,
    });
    if (result.survivors.length > 0)
      throw new Error(`processes survived SIGKILL: ${result.survivors.join(", ")}`);
    return result;
  }

  private saveRegistry(): void {
    writeRegistry({
      version: 1,
      dataDir: this.dataDir,
      basePort: this.basePort,
      controllers: this.controllers,
      processes: [...this.byKey.values()].map(({ spec, pid, startedAt }) => ({
        ...spec,
        pid,
        startedAt,
      })),
      ...(this.tls
        ? {
            tls: {
              caFile: this.tls.caFile,
              clientCertFile: this.tls.client.certFile,
              clientKeyFile: this.tls.client.keyFile,
            },
          }
        : {}),
    });
  }
}

function key(role: Role, id: number): string {
  return `${role}-${id}`;
}

/** Plans the cluster without starting anything. */
export function createCluster(options: StartClusterOptions): ProcessCluster {
  const shape: ClusterShape = {
    controllers: options.controllers ?? 3,
    brokers: options.brokers ?? 3,
    coordinators: options.coordinators ?? 3,
  };
  const basePort = options.basePort ?? DEFAULT_BASE_PORT;
  const specs = planCluster({ dataDir: options.dataDir, basePort, shape });
  let tls: ClusterTlsFiles | undefined;
  if (options.tls) {
    tls = ensureClusterCa(resolve(options.dataDir));
    for (const s of specs) ensureProcessCertificate(tls, s.role, s.id, hostOf(s.address));
    useClientTlsFiles({
      caFile: tls.caFile,
      certFile: tls.client.certFile,
      keyFile: tls.client.keyFile,
    });
  }
  const reloadMs = typeof options.tls === "object" ? options.tls.reloadMs : undefined;
  return new ProcessCluster(
    resolve(options.dataDir),
    basePort,
    specs,
    options.env ?? {},
    options.extraArgs ?? [],
    tls,
    reloadMs,
    options.argsFor,
  );
}

/** Starts every process; with healthTimeoutMs, waits until all are SERVING (stopping them all if they are not). */
export async function startCluster(options: StartClusterOptions): Promise<ProcessCluster> {
  const cluster = createCluster(options);
  cluster.startAll();
  if (options.healthTimeoutMs !== undefined) {
    try {
      await cluster.waitForHealth({ timeoutMs: options.healthTimeoutMs });
    } catch (e) {
      await cluster.stop({ termTimeoutMs: 2_000 });
      throw e;
    }
  }
  return cluster;
}

/** Polls every address until all answer SERVING; throws naming the laggards after timeoutMs. */
export async function waitForHealth(
  addresses: readonly string[],
  options: { timeoutMs: number; intervalMs?: number },
): Promise<void> {
  const answers = await Promise.all(
    addresses.map((a) =>
      waitForHealthStatus(a, {
        timeoutMs: options.timeoutMs,
        intervalMs: options.intervalMs ?? 200,
      }),
    ),
  );
  const lagging = addresses.flatMap((a, i) =>
    answers[i] === "SERVING" ? [] : [`${a}=${answers[i]}`],
  );
  if (lagging.length > 0)
    throw new Error(`not SERVING within ${options.timeoutMs} ms: ${lagging.join(", ")}`);
}

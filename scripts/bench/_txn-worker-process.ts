// The driver's handle on the client process (_txn-worker.js): sends one job at a time and
// waits (bounded) for its answer. A job over its bound kills the process: its state is unknown.
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createInterface } from "node:readline";
import type { Job, JobResult, WorkerAnswer } from "./_txn-job.js";

const EXIT_TIMEOUT_MS = 10_000;

export class WorkerProcess {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly answers: WorkerAnswer[] = [];
  private waiter: (() => void) | undefined;
  private exited = false;
  private busy = false;
  private stdinError: Error | undefined;

  constructor(script: string) {
    this.child = spawn(process.execPath, [script], { stdio: ["pipe", "pipe", "pipe"] });
    this.child.stderr.pipe(process.stderr);
    createInterface({ input: this.child.stdout, crlfDelay: Infinity }).on("line", (line) => {
      if (line.trim() === "") return;
      this.answers.push(JSON.parse(line) as WorkerAnswer);
      this.wakeWaiter();
    });
    this.child.on("exit", () => {
      this.exited = true;
      this.wakeWaiter();
    });
    // A write to a process that has just died fails asynchronously (EPIPE); without a listener
    // that is an uncaught exception. Treat it as the process being gone: the job's answer says so.
    this.child.stdin.on("error", (err) => this.markGone(err));
    this.child.on("error", (err) => this.markGone(err));
  }

  /** Runs one job; rejects when it fails, when the process dies, or after timeoutMs (then the process is killed). */
  async run<R extends JobResult>(job: Job, timeoutMs: number): Promise<R> {
    if (this.busy) throw new Error("the client process runs one job at a time");
    if (this.exited || this.stdinError)
      throw new Error(
        `the client process has exited${this.stdinError ? ` (${this.stdinError.message})` : ""}`,
      );
    this.busy = true;
    let timer: NodeJS.Timeout | undefined;
    try {
      this.child.stdin.write(`${JSON.stringify(job)}\n`);
      const timedOut = new Promise<"timeout">(
        (resolve) => (timer = setTimeout(() => resolve("timeout"), timeoutMs)),
      );
      const answer = await Promise.race([this.nextAnswer(), timedOut]);
      if (answer === "timeout") {
        this.child.kill("SIGKILL");
        throw new Error(`${job.kind} job not done within ${timeoutMs} ms; client process killed`);
      }
      if (answer === undefined) {
        const why = this.goneReason() ?? `code ${this.child.exitCode ?? this.child.signalCode}`;
        throw new Error(`client process exited during a ${job.kind} job (${why})`);
      }
      if (!answer.ok) throw new Error(`${job.kind} job failed: ${answer.error}`);
      if (answer.result.kind !== job.kind)
        throw new Error(
          `client process answered a ${answer.result.kind} result to a ${job.kind} job`,
        );
      return answer.result as R;
    } finally {
      clearTimeout(timer);
      this.busy = false;
    }
  }

  /** Ends stdin (the process exits when idle); SIGKILL if it has not exited within a bound. */
  async close(): Promise<void> {
    if (this.exited) return;
    // A process that no longer reads its stdin cannot be asked to exit: kill it.
    if (this.stdinError) this.child.kill("SIGKILL");
    else this.child.stdin.end();
    let timer: NodeJS.Timeout | undefined;
    const gone = new Promise<void>((resolve) => this.child.once("exit", () => resolve()));
    await Promise.race([
      gone,
      new Promise<void>((resolve) => (timer = setTimeout(resolve, EXIT_TIMEOUT_MS))),
    ]);
    clearTimeout(timer);
    if (!this.exited) this.child.kill("SIGKILL");
  }

  /** The next answer, or undefined once the process has exited without one. */
  private async nextAnswer(): Promise<WorkerAnswer | undefined> {
    while (this.answers.length === 0 && !this.exited && !this.stdinError)
      await new Promise<void>((resolve) => (this.waiter = resolve));
    return this.answers.shift();
  }

  /** Why the process cannot take a job although it has not exited (its stdin broke), if so. */
  private goneReason(): string | undefined {
    return this.stdinError?.message;
  }

  private markGone(err: Error): void {
    this.stdinError = err;
    this.wakeWaiter();
  }

  private wakeWaiter(): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }
}

// PBKDF2 on a thread of its own (a worker thread), not on libuv's pool: libuv's four threads
// also do the process's file and database I/O, and a flood of password checks (each costs
// milliseconds by design) must not hold them. One worker runs one derivation at a time, in
// arrival order; the caller bounds how many wait (password-verifier.ts).
import { Worker } from "node:worker_threads";

/** The worker's code: a CommonJS script (eval), so it needs no file of its own next to the build. */
const WORKER_SOURCE = `
const { parentPort } = require("node:worker_threads");
const { pbkdf2Sync } = require("node:crypto");
parentPort.on("message", (job) => {
  try {
    const key = pbkdf2Sync(job.password, job.salt, job.iterations, job.keyLength, job.hash);
    parentPort.postMessage({ id: job.id, key });
  } catch (e) {
    parentPort.postMessage({ id: job.id, error: String(e && e.message || e) });
  }
});
`;

interface Pending {
  readonly resolve: (key: Buffer) => void;
  readonly reject: (e: Error) => void;
}

export class Pbkdf2Worker {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;

  /** PBKDF2(password, salt, iterations) with HMAC-`hash`, keyLength bytes. */
  derive(
    password: Buffer,
    salt: Buffer,
    iterations: number,
    keyLength: number,
    hash: string,
  ): Promise<Buffer> {
    const worker = this.started();
    const id = this.nextId++;
    return new Promise<Buffer>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      if (this.pending.size === 1) worker.ref(); // keep the process up only while work waits
      worker.postMessage({ id, password, salt, iterations, keyLength, hash });
    });
  }

  /** Stops the worker; derivations still waiting fail. */
  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    this.failAll(new Error("the PBKDF2 worker was closed"));
    if (w) await w.terminate();
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(WORKER_SOURCE, { eval: true });
    w.unref();
    w.on("message", (m: { id: number; key?: Uint8Array; error?: string }) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (this.pending.size === 0) w.unref();
      if (m.key) p.resolve(Buffer.from(m.key));
      else p.reject(new Error(`PBKDF2 failed: ${m.error ?? "unknown error"}`));
    });
    // A dead worker fails what it had; the next derivation starts a new one.
    const lost = (why: string): void => {
      if (this.worker === w) this.worker = undefined;
      this.failAll(new Error(why));
    };
    w.on("error", (e) => lost(`the PBKDF2 worker failed: ${e.message}`));
    w.on("exit", (code) => lost(`the PBKDF2 worker exited (code ${code})`));
    this.worker = w;
    return w;
  }

  private failAll(e: Error): void {
    const all = [...this.pending.values()];
    this.pending.clear();
    for (const p of all) p.reject(e);
  }
}

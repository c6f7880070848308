// A grpc-js CertificateProvider over the TLS files that re-reads them when they change on disk
// (rotation without a restart). Unlike grpc-js's FileWatcherCertificateProvider it publishes
// only material that passes loadTlsMaterial (key matches, chains to the CA, not expired): a
// half-written or wrong file is logged and the last good certificate keeps serving.
import { statSync } from "node:fs";
import type * as grpc from "@grpc/grpc-js";
import {
  loadTlsMaterial,
  type TlsConfig,
  type TlsFlagNames,
  type TlsMaterial,
} from "../common/tls-config.js";

type CaListener = grpc.experimental.CaCertificateUpdateListener;
type IdentityListener = grpc.experimental.IdentityCertificateUpdateListener;

export interface ReloadEvents {
  /** Throws when new material may not be used by this process (a service: its role and node id). */
  validate?(material: TlsMaterial): void;
  reloaded?(material: TlsMaterial): void;
  rejected?(error: Error): void;
}

export class ReloadingCertificateProvider implements grpc.experimental.CertificateProvider {
  private material: TlsMaterial;
  private fingerprint: string;
  private timer: NodeJS.Timeout | undefined;
  private readonly caListeners = new Set<CaListener>();
  private readonly identityListeners = new Set<IdentityListener>();

  constructor(
    private readonly config: TlsConfig,
    initial: TlsMaterial,
    private readonly names: TlsFlagNames,
    private readonly events: ReloadEvents = {},
  ) {
    this.material = initial;
    this.fingerprint = this.statFingerprint();
  }

  current(): TlsMaterial {
    return this.material;
  }

  /** Checks the files now (the timer does this every reloadMs); true when new material was published. */
  checkNow(): boolean {
    const fingerprint = this.statFingerprint();
    if (fingerprint === this.fingerprint) return false;
    let next: TlsMaterial;
    try {
      next = loadTlsMaterial(this.config, this.names);
      this.events.validate?.(next);
    } catch (e) {
      // Not remembered as seen: a rotation that writes the files one by one settles on the next check.
      this.events.rejected?.(e as Error);
      return false;
    }
    this.fingerprint = fingerprint;
    if (
      next.ca.equals(this.material.ca) &&
      bufEq(next.cert, this.material.cert) &&
      bufEq(next.key, this.material.key)
    )
      return false;
    this.material = next;
    this.events.reloaded?.(next);
    for (const l of this.caListeners) l({ caCertificate: next.ca });
    if (next.cert && next.key)
      for (const l of this.identityListeners) l({ certificate: next.cert, privateKey: next.key });
    return true;
  }

  addCaCertificateListener(listener: CaListener): void {
    this.caListeners.add(listener);
    // Asynchronously: grpc-js's server registers its own watcher right after adding ours.
    process.nextTick(
      () => this.caListeners.has(listener) && listener({ caCertificate: this.material.ca }),
    );
    this.startTimer();
  }

  removeCaCertificateListener(listener: CaListener): void {
    this.caListeners.delete(listener);
    this.maybeStopTimer();
  }

  addIdentityCertificateListener(listener: IdentityListener): void {
    this.identityListeners.add(listener);
    process.nextTick(() => {
      if (!this.identityListeners.has(listener)) return;
      const { cert, key } = this.material;
      listener(cert && key ? { certificate: cert, privateKey: key } : null);
    });
    this.startTimer();
  }

  removeIdentityCertificateListener(listener: IdentityListener): void {
    this.identityListeners.delete(listener);
    this.maybeStopTimer();
  }

  private startTimer(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.checkNow(), this.config.reloadMs);
    this.timer.unref();
  }

  private maybeStopTimer(): void {
    if (this.caListeners.size > 0 || this.identityListeners.size > 0 || !this.timer) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Size and mtime of each file: cheap to poll; a change triggers a full read and check. */
  private statFingerprint(): string {
    return [this.config.caFile, this.config.certFile, this.config.keyFile]
      .map((f) => {
        if (f === undefined) return "-";
        try {
          const s = statSync(f);
          return `${s.size}:${s.mtimeMs}:${s.ino}`;
        } catch {
          return "missing";
        }
      })
      .join("|");
  }
}

function bufEq(a: Buffer | undefined, b: Buffer | undefined): boolean {
  return a === undefined || b === undefined ? a === b : a.equals(b);
}

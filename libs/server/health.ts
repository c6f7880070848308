// grpc.health.v1 for one process: the overall status ("") and one status per registered
// service follow the process readiness together; NOT_SERVING until the role says it is ready
// and again from the moment shutdown begins. The service "liveness" is SERVING for as long as
// the process answers at all: Kubernetes points its liveness probe there, so a node that is
// alive but not (yet) ready, e.g. recovering a long log, is not restarted.
import type * as grpc from "@grpc/grpc-js";
import { HealthImplementation, type ServingStatus } from "grpc-health-check";

export const LIVENESS_SERVICE = "liveness";

export class ProcessHealth {
  private readonly implementation = new HealthImplementation({
    "": "NOT_SERVING",
    [LIVENESS_SERVICE]: "SERVING",
  });
  private readonly serviceNames = new Set<string>();
  private ready = false;
  private shuttingDown = false;

  addToServer(server: grpc.Server): void {
    this.implementation.addToServer(server);
  }

  /** Tracks a service so its per-service status follows readiness. */
  addService(definition: grpc.ServiceDefinition): void {
    const name = serviceNameOf(definition);
    if (name === undefined || this.serviceNames.has(name)) return;
    this.serviceNames.add(name);
    this.implementation.setStatus(name, this.status());
  }

  setReady(ready: boolean): void {
    this.ready = ready;
    this.publish();
  }

  /** Final: NOT_SERVING from now on, whatever setReady says later. */
  beginShutdown(): void {
    this.shuttingDown = true;
    this.publish();
  }

  isReady(): boolean {
    return this.ready && !this.shuttingDown;
  }

  status(): ServingStatus {
    return this.isReady() ? "SERVING" : "NOT_SERVING";
  }

  services(): string[] {
    return [...this.serviceNames].sort();
  }

  private publish(): void {
    const status = this.status();
    this.implementation.setStatus("", status);
    for (const name of this.serviceNames) this.implementation.setStatus(name, status);
  }
}

/** "tern.v1.Broker" from a definition whose methods have paths "/tern.v1.Broker/Produce". */
export function serviceNameOf(definition: grpc.ServiceDefinition): string | undefined {
  const first = Object.values(definition)[0];
  const m = first ? /^\/([^/]+)\//.exec(first.path) : null;
  return m ? m[1] : undefined;
}

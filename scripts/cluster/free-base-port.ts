// A --base-port whose whole local-cluster port set (gRPC and metrics, every role) is free now,
// so tests and benchmarks never collide with a cluster someone else runs on this machine.
import { planCluster } from "./layout.js";
import { portInUse } from "./port-check.js";

const ATTEMPTS_MAX = 30;
const BASE_MIN = 20_000;
const BASE_SPAN = 30_000;

export async function freeBasePort(shape = { controllers: 3, brokers: 3, coordinators: 3 }): Promise<number> {
  for (let attempt = 0; attempt < ATTEMPTS_MAX; attempt++) {
    const base = BASE_MIN + Math.floor(Math.random() * BASE_SPAN);
    const specs = planCluster({ dataDir: "/unused", basePort: base, shape });
    let free = true;
    for (const spec of specs) {
      if ((await portInUse("127.0.0.1", spec.port)) || (await portInUse("127.0.0.1", spec.metricsPort))) {
        free = false;
        break;
      }
    }
    if (free) return base;
  }
  throw new Error(`no free base port found in ${ATTEMPTS_MAX} attempts`);
}

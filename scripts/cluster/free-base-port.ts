// A --base-port whose whole local-cluster port set (gRPC and metrics, every role) is free now,
// so tests and benchmarks never collide with a cluster someone else runs on this machine.
import { planCluster } from "./layout.js";
import { portInUse, randomListenBase } from "./port-check.js";

const ATTEMPTS_MAX = 30;

/** From the base port to the last metrics port of the shape, inclusive. */
export function clusterPortSpan(shape: {
  controllers: number;
  brokers: number;
  coordinators: number;
}): number {
  const specs = planCluster({ dataDir: "/unused", basePort: 1, shape });
  return Math.max(...specs.map((s) => s.metricsPort));
}

export async function freeBasePort(
  shape = { controllers: 3, brokers: 3, coordinators: 3 },
): Promise<number> {
  for (let attempt = 0; attempt < ATTEMPTS_MAX; attempt++) {
    const base = randomListenBase(clusterPortSpan(shape));
    const specs = planCluster({ dataDir: "/unused", basePort: base, shape });
    let free = true;
    for (const spec of specs) {
      if (
        (await portInUse("127.0.0.1", spec.port)) ||
        (await portInUse("127.0.0.1", spec.metricsPort)) ||
        (spec.kafkaPort !== undefined && (await portInUse("127.0.0.1", spec.kafkaPort)))
      ) {
        free = false;
        break;
      }
    }
    if (free) return base;
  }
  throw new Error(`no free base port found in ${ATTEMPTS_MAX} attempts`);
}

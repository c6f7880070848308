// Where each process of a local cluster lives: ports, addresses, data and log paths. Pure.
// Default ports: controllers 9090+i, brokers 9190+i, coordinators 9290+i, metrics +1000;
// --base-port P moves all of them (controllers P+i, brokers P+100+i, coordinators P+200+i).
import { join, resolve } from "node:path";
import type { Role } from "../../libs/common/config.js";

export const ROLES: readonly Role[] = ["controller", "broker", "coordinator"];
export const DEFAULT_BASE_PORT = 9090;
export const ROLE_PORT_OFFSET: Record<Role, number> = {
  controller: 0,
  broker: 100,
  coordinator: 200,
};
export const METRICS_PORT_OFFSET = 1000;
/** Kafka listeners: the gRPC port + 200 (brokers base + 300 + i, coordinators base + 400 + i; libs/common/config.ts agrees). */
export const KAFKA_PORT_OFFSET = 200;
/** Per role; keeps port ranges of the roles from overlapping. */
export const PROCESSES_PER_ROLE_MAX = 50;
export const HOST = "127.0.0.1";

export interface ClusterShape {
  readonly controllers: number;
  readonly brokers: number;
  readonly coordinators: number;
}

export interface ProcessSpec {
  readonly role: Role;
  readonly id: number;
  readonly port: number;
  readonly metricsPort: number;
  /** Brokers and coordinators: the Kafka protocol listener's port. */
  readonly kafkaPort?: number;
  /** host:port of the gRPC server. */
  readonly address: string;
  readonly metricsAddress: string;
  readonly dataDir: string;
  readonly logFile: string;
}

export function countOf(shape: ClusterShape, role: Role): number {
  return role === "controller"
    ? shape.controllers
    : role === "broker"
      ? shape.brokers
      : shape.coordinators;
}

export function planCluster(options: {
  dataDir: string;
  basePort: number;
  shape: ClusterShape;
}): ProcessSpec[] {
  const dataDir = resolve(options.dataDir);
  const specs: ProcessSpec[] = [];
  for (const role of ROLES) {
    const count = countOf(options.shape, role);
    if (!Number.isInteger(count) || count < 0 || count > PROCESSES_PER_ROLE_MAX) {
      throw new Error(
        `${role} count must be an integer in 0..${PROCESSES_PER_ROLE_MAX}, got ${count}`,
      );
    }
    for (let id = 0; id < count; id++) {
      const port = options.basePort + ROLE_PORT_OFFSET[role] + id;
      const metricsPort = port + METRICS_PORT_OFFSET;
      specs.push({
        role,
        id,
        port,
        metricsPort,
        ...(role !== "controller" ? { kafkaPort: port + KAFKA_PORT_OFFSET } : {}),
        address: `${HOST}:${port}`,
        metricsAddress: `${HOST}:${metricsPort}`,
        dataDir: join(dataDir, `${role}-${id}`),
        logFile: join(dataDir, "logs", `${role}-${id}.log`),
      });
    }
  }
  if (options.basePort < 1 || specs.some((s) => s.metricsPort > 65535)) {
    throw new Error(`--base-port ${options.basePort} puts ports outside 1..65535`);
  }
  return specs;
}

/** The --controllers flag value: id@host:port,... */
export function controllersFlag(specs: readonly ProcessSpec[]): string {
  return specs
    .filter((s) => s.role === "controller")
    .map((s) => `${s.id}@${s.address}`)
    .join(",");
}

/** The command-line arguments of one service process. */
export function serviceArgs(spec: ProcessSpec, controllers: string): string[] {
  return [
    "--node-id",
    String(spec.id),
    "--listen",
    spec.address,
    "--metrics-listen",
    spec.metricsAddress,
    ...(spec.kafkaPort !== undefined ? ["--kafka-listen", `${HOST}:${spec.kafkaPort}`] : []),
    "--controllers",
    controllers,
    "--data-dir",
    spec.dataDir,
  ];
}

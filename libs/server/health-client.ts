// One grpc.health.v1 Check against an address, bounded by a deadline: what the cluster script,
// tests, chaos and benchmarks use to know a process is up and ready.
import * as grpc from "@grpc/grpc-js";
import { service as healthService } from "grpc-health-check";
import { channelCredentials } from "./tls/credentials.js";
import { GRPC_HEALTH_PROBE_OPTIONS } from "./grpc-options.js";

export type HealthAnswer =
  "SERVING" | "NOT_SERVING" | "UNKNOWN" | "SERVICE_UNKNOWN" | "unreachable";

const HealthClient = grpc.makeGenericClientConstructor(
  healthService as unknown as grpc.ServiceDefinition,
  "Health",
);

/** The health status of `service` ("" = the whole process) at address, or "unreachable". */
export async function checkHealth(
  address: string,
  options: { service?: string; timeoutMs?: number } = {},
): Promise<HealthAnswer> {
  const client = new HealthClient(address, channelCredentials(), GRPC_HEALTH_PROBE_OPTIONS);
  try {
    return await checkWith(client, options.service ?? "", options.timeoutMs ?? 1_000);
  } finally {
    client.close();
  }
}

function checkWith(client: grpc.Client, service: string, timeoutMs: number): Promise<HealthAnswer> {
  return new Promise<HealthAnswer>((resolveCheck) => {
    client.makeUnaryRequest(
      "/grpc.health.v1.Health/Check",
      (value: { service: string }) => healthService.Check!.requestSerialize(value),
      (bytes: Buffer) =>
        healthService.Check!.responseDeserialize(bytes) as { status: HealthAnswer },
      { service },
      { deadline: Date.now() + timeoutMs },
      (err: grpc.ServiceError | null, response?: { status: HealthAnswer }) => {
        if (err)
          resolveCheck(err.code === grpc.status.NOT_FOUND ? "SERVICE_UNKNOWN" : "unreachable");
        else resolveCheck(response?.status ?? "UNKNOWN");
      },
    );
  });
}

/**
 * Polls every intervalMs (one channel for the whole wait: cheap on a loaded machine) until the
 * answer is `want` or timeoutMs passes; returns the last answer.
 */
export async function waitForHealthStatus(
  address: string,
  options: { want?: HealthAnswer; service?: string; timeoutMs: number; intervalMs?: number },
): Promise<HealthAnswer> {
  const want = options.want ?? "SERVING";
  const deadlineMs = Date.now() + options.timeoutMs;
  const intervalMs = options.intervalMs ?? 100;
  // A short reconnect backoff so a process that comes up late is noticed promptly.
  const client = new HealthClient(address, channelCredentials(), GRPC_HEALTH_PROBE_OPTIONS);
  let last: HealthAnswer = "unreachable";
  try {
    while (Date.now() < deadlineMs) {
      last = await checkWith(
        client,
        options.service ?? "",
        Math.max(50, Math.min(2_000, deadlineMs - Date.now())),
      );
      if (last === want) return last;
      await new Promise((r) => setTimeout(r, intervalMs));
    }
    return last;
  } finally {
    client.close();
  }
}

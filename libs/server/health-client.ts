// One grpc.health.v1 Check against an address, bounded by a deadline: what the cluster script,
// tests, chaos and benchmarks use to know a process is up and ready.
import * as grpc from "@grpc/grpc-js";
import { service as healthService } from "grpc-health-check";

export type HealthAnswer = "SERVING" | "NOT_SERVING" | "UNKNOWN" | "SERVICE_UNKNOWN" | "unreachable";

const HealthClient = grpc.makeGenericClientConstructor(healthService as unknown as grpc.ServiceDefinition, "Health");

/** The health status of `service` ("" = the whole process) at address, or "unreachable". */
export async function checkHealth(address: string, options: { service?: string; timeoutMs?: number } = {}): Promise<HealthAnswer> {
  const client = new HealthClient(address, grpc.credentials.createInsecure());
  try {
    return await new Promise<HealthAnswer>((resolveCheck) => {
      const deadline = Date.now() + (options.timeoutMs ?? 1_000);
      client.makeUnaryRequest(
        "/grpc.health.v1.Health/Check",
        (value: { service: string }) => healthService.Check!.requestSerialize(value),
        (bytes: Buffer) => healthService.Check!.responseDeserialize(bytes) as { status: HealthAnswer },
        { service: options.service ?? "" },
        { deadline },
        (err: grpc.ServiceError | null, response?: { status: HealthAnswer }) => {
          if (err) resolveCheck(err.code === grpc.status.NOT_FOUND ? "SERVICE_UNKNOWN" : "unreachable");
          else resolveCheck(response?.status ?? "UNKNOWN");
        },
      );
    });
  } finally {
    client.close();
  }
}

/** Polls checkHealth every intervalMs until it answers `want` or timeoutMs passes; returns the last answer. */
export async function waitForHealthStatus(
  address: string,
  options: { want?: HealthAnswer; service?: string; timeoutMs: number; intervalMs?: number },
): Promise<HealthAnswer> {
  const want = options.want ?? "SERVING";
  const deadlineMs = Date.now() + options.timeoutMs;
  const intervalMs = options.intervalMs ?? 100;
  let last: HealthAnswer = "unreachable";
  while (Date.now() < deadlineMs) {
    const check: { service?: string; timeoutMs: number } = { timeoutMs: Math.max(50, Math.min(1_000, deadlineMs - Date.now())) };
    if (options.service !== undefined) check.service = options.service;
    last = await checkHealth(address, check);
    if (last === want) return last;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  return last;
}

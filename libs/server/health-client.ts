// Health checks with this process's outgoing credentials (tls/credentials.ts): what the
// cluster script, tests, chaos and benchmarks use to know a process is up and ready.
import * as health from "../grpc/health-check.js";
import { channelCredentials } from "./tls/credentials.js";

export type { HealthAnswer } from "../grpc/health-check.js";

/** The health status of `service` ("" = the whole process) at address, or "unreachable". */
export function checkHealth(
  address: string,
  options: { service?: string; timeoutMs?: number } = {},
): Promise<health.HealthAnswer> {
  return health.checkHealth(address, channelCredentials(), options);
}

/** Polls until the answer is `want` (default SERVING) or timeoutMs passes; returns the last answer. */
export function waitForHealthStatus(
  address: string,
  options: {
    want?: health.HealthAnswer;
    service?: string;
    timeoutMs: number;
    intervalMs?: number;
  },
): Promise<health.HealthAnswer> {
  return health.waitForHealthStatus(address, channelCredentials(), options);
}

// One grpc.health.v1 Check against an address, bounded by a deadline: how clients, tools and
// tests know a process is up and ready. The request and answer have one field each, so they
// are encoded here by hand: a client needs neither grpc-health-check nor its .proto.
import * as grpc from "@grpc/grpc-js";
import { GRPC_HEALTH_PROBE_OPTIONS } from "./grpc-options.js";

export type HealthAnswer =
  "SERVING" | "NOT_SERVING" | "UNKNOWN" | "SERVICE_UNKNOWN" | "unreachable";

/** grpc.health.v1.HealthCheckResponse.ServingStatus by number. */
const SERVING_STATUS: readonly HealthAnswer[] = [
  "UNKNOWN",
  "SERVING",
  "NOT_SERVING",
  "SERVICE_UNKNOWN",
];
const CHECK_METHOD = "/grpc.health.v1.Health/Check";

/** HealthCheckRequest { string service = 1; } */
export function encodeCheckRequest(service: string): Buffer {
  const name = Buffer.from(service, "utf8");
  const length: number[] = [];
  for (let n = name.length; ; n >>>= 7) {
    if (n < 0x80) {
      length.push(n);
      break;
    }
    length.push((n & 0x7f) | 0x80);
  }
  return Buffer.concat([Buffer.from([0x0a, ...length]), name]);
}

/** HealthCheckResponse { ServingStatus status = 1; }: the status, UNKNOWN when absent or unknown. */
export function decodeCheckResponse(bytes: Buffer): HealthAnswer {
  let status = 0;
  let at = 0;
  const varint = (): number => {
    let value = 0;
    for (let shift = 0; at < bytes.length && shift < 35; shift += 7) {
      const b = bytes[at++]!;
      value += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return value;
    }
    throw new Error("malformed health answer");
  };
  while (at < bytes.length) {
    const tag = varint();
    const wire = tag & 7;
    if (wire === 0) {
      const value = varint();
      if (tag >>> 3 === 1) status = value;
    } else if (wire === 2) {
      const length = varint(); // read before `at` is: varint() moves it
      at += length;
    } else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else throw new Error("malformed health answer");
  }
  return SERVING_STATUS[status] ?? "UNKNOWN";
}

function healthClient(address: string, credentials: grpc.ChannelCredentials): grpc.Client {
  return new grpc.Client(address, credentials, GRPC_HEALTH_PROBE_OPTIONS);
}

function checkWith(client: grpc.Client, service: string, timeoutMs: number): Promise<HealthAnswer> {
  return new Promise<HealthAnswer>((resolveCheck) => {
    client.makeUnaryRequest(
      CHECK_METHOD,
      (value: string) => encodeCheckRequest(value),
      (bytes: Buffer) => decodeCheckResponse(bytes),
      service,
      { deadline: Date.now() + timeoutMs },
      (err: grpc.ServiceError | null, answer?: HealthAnswer) => {
        if (err)
          resolveCheck(err.code === grpc.status.NOT_FOUND ? "SERVICE_UNKNOWN" : "unreachable");
        else resolveCheck(answer ?? "UNKNOWN");
      },
    );
  });
}

/** The health status of `service` ("" = the whole process) at address, or "unreachable". */
export async function checkHealth(
  address: string,
  credentials: grpc.ChannelCredentials,
  options: { service?: string; timeoutMs?: number } = {},
): Promise<HealthAnswer> {
  const client = healthClient(address, credentials);
  try {
    return await checkWith(client, options.service ?? "", options.timeoutMs ?? 1_000);
  } finally {
    client.close();
  }
}

/**
 * Polls every intervalMs (one channel for the whole wait: cheap on a loaded machine) until the
 * answer is `want` or timeoutMs passes; returns the last answer.
 */
export async function waitForHealthStatus(
  address: string,
  credentials: grpc.ChannelCredentials,
  options: { want?: HealthAnswer; service?: string; timeoutMs: number; intervalMs?: number },
): Promise<HealthAnswer> {
  const want = options.want ?? "SERVING";
  const deadlineMs = Date.now() + options.timeoutMs;
  const intervalMs = options.intervalMs ?? 100;
  const client = healthClient(address, credentials);
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

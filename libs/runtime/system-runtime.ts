// The runtime of a real process: the system clock and timers (wall time skewed only by the chaos
// suite's TERN_CLOCK_OFFSET_FILE, clock-offset.ts), a random source seeded from the operating
// system's entropy (system-random.ts), so two processes never draw the same sequence, grpc-js as
// the transport between services, its channels presenting `credentials` (the process's
// certificate under TLS), and the failpoints its environment arms (TERN_FAILPOINTS). The process
// entry builds it once and closes the transport after compose()'s parts
// (libs/server/start-service.ts).
import {
  clientChannelCredentials,
  type ChannelCredentialsSource,
} from "../grpc/client-credentials.js";
import { GrpcServiceTransport } from "../grpc/grpc-service-transport.js";
import { Failpoints } from "../common/failpoints.js";
import { clockOffsetFromEnv, NO_CLOCK_OFFSET } from "./clock-offset.js";
import type { ProcessRuntime } from "./process-runtime.js";
import { offsetSystemClock, systemClock } from "./system-clock.js";
import { systemRandom } from "./system-random.js";

export interface SystemRuntime extends ProcessRuntime {
  readonly transport: GrpcServiceTransport;
}

/** `credentials`: what the transport's channels present (default plaintext). */
export function systemRuntime(
  credentials: ChannelCredentialsSource = clientChannelCredentials(undefined),
  env: NodeJS.ProcessEnv = process.env,
): SystemRuntime {
  const offset = clockOffsetFromEnv(env);
  return {
    clock: offset === NO_CLOCK_OFFSET ? systemClock : offsetSystemClock(offset),
    random: systemRandom(),
    transport: new GrpcServiceTransport({ credentials }),
    failpoints: Failpoints.fromEnv(env),
  };
}

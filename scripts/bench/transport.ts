// `npm run bench -- transport [--round-trips N] [--paced-round-trips N] [--gap-ms G] [--bytes B]
// [--repeat R]`: what one message exchange costs between two Node processes on this machine,
// by mechanism: raw TCP (4-byte length prefix), a grpc-js bidi stream (how Raft peers talk,
// with the Raft peer channel options) and grpc-js unary calls (how services call each other,
// with the client options). The other process only echoes (scripts/bench/_transport-echo.ts),
// bytes pass unchanged (no protobuf), so the figures are the transports' own. Each mechanism
// runs back to back (N round trips, one in flight: hot code, busy loops) and paced (one round
// trip every G ms, default 10: both processes idle in between, as at a few transactions per
// second, so every message pays a wake-up). The mechanisms alternate, R times (default 2).
// JSON Lines on stdout, per run: round_trip_p50 / round_trip_p99 (ms), caller_cpu_us and
// echo_cpu_us per round trip (the paced caller's CPU includes its own timer).
import * as grpc from "@grpc/grpc-js";
import { fork, type ChildProcess } from "node:child_process";
import net from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import {
  GRPC_CLIENT_OPTIONS,
  GRPC_DEFAULT_LIMITS,
  raftPeerChannelOptions,
} from "../../libs/grpc/grpc-options.js";
import { ECHO_SERVICE, FRAME_HEADER_BYTES, frameReader, type EchoMode } from "./_transport-wire.js";

const here = dirname(fileURLToPath(import.meta.url));
const MECHANISMS = ["tcp", "grpc-stream", "grpc-unary"] as const;
type Mechanism = (typeof MECHANISMS)[number];
const WARMUP_ROUND_TRIPS = 500;
const ROUND_TRIPS_MAX = 1_000_000;
const ROUND_TRIP_TIMEOUT_MS = 5_000;
const CHILD_START_TIMEOUT_MS = 10_000;

interface Exchange {
  roundTrip(): Promise<void>;
  close(): void;
}

export async function run(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    strict: true,
    options: {
      "round-trips": { type: "string", default: "5000" },
      "paced-round-trips": { type: "string", default: "300" },
      "gap-ms": { type: "string", default: "10" },
      bytes: { type: "string", default: "200" },
      repeat: { type: "string", default: "2" },
    },
  });
  const hot = count(values["round-trips"], "--round-trips");
  const paced = count(values["paced-round-trips"], "--paced-round-trips");
  const gapMs = count(values["gap-ms"], "--gap-ms", 1_000);
  const bytes = count(values.bytes, "--bytes", 1024 * 1024);
  const repeat = count(values.repeat, "--repeat", 20);
  for (let r = 1; r <= repeat; r++) {
    for (const pacing of ["back-to-back", "paced"] as const) {
      for (const mechanism of MECHANISMS) {
        const n = pacing === "paced" ? paced : hot;
        const figures = await measure(mechanism, n, pacing === "paced" ? gapMs : 0, bytes);
        const base = { bench: "transport", case: `${mechanism}-${pacing}`, run: r, bytes, n };
        for (const [metric, value, unit] of [
          ["round_trip_p50", figures.p50Ms, "ms"],
          ["round_trip_p99", figures.p99Ms, "ms"],
          ["caller_cpu_us_per_round_trip", figures.callerCpuUs, "us"],
          ["echo_cpu_us_per_round_trip", figures.echoCpuUs, "us"],
        ] as const)
          process.stdout.write(`${JSON.stringify({ ...base, metric, value, unit })}\n`);
      }
    }
  }
  return 0;
}

function count(raw: string | undefined, name: string, max = ROUND_TRIPS_MAX): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > max)
    throw badValue(`${name} must be an integer in 1..${max}, got "${raw}"`);
  return n;
}

/** A bad option value: one line and exit 2, as parseArgs's own errors (main.ts). */
function badValue(message: string): Error {
  return Object.assign(new Error(message), { code: "ERR_PARSE_ARGS_INVALID_OPTION_VALUE" });
}

async function measure(
  mechanism: Mechanism,
  n: number,
  gapMs: number,
  bytes: number,
): Promise<{ p50Ms: number; p99Ms: number; callerCpuUs: number; echoCpuUs: number }> {
  const echoMode: EchoMode = mechanism === "tcp" ? "tcp" : "grpc";
  const echo = fork(join(here, "_transport-echo.js"), [echoMode], { stdio: "inherit" });
  try {
    const { port } = await reply<{ port: number }>(echo, undefined, CHILD_START_TIMEOUT_MS);
    const exchange = await connect(mechanism, port, Buffer.alloc(bytes, 7));
    try {
      for (let i = 0; i < WARMUP_ROUND_TRIPS; i++) await exchange.roundTrip();
      const echo0 = (await reply<{ cpuUs: number }>(echo, "cpu")).cpuUs;
      const caller0 = process.cpuUsage();
      const latencies: number[] = [];
      for (let i = 0; i < n; i++) {
        if (gapMs > 0) await new Promise((r) => setTimeout(r, gapMs));
        const start = performance.now();
        await exchange.roundTrip();
        latencies.push(performance.now() - start);
      }
      const caller = process.cpuUsage(caller0);
      const echo1 = (await reply<{ cpuUs: number }>(echo, "cpu")).cpuUs;
      latencies.sort((a, b) => a - b);
      const at = (q: number): number =>
        round3(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))]!);
      return {
        p50Ms: at(0.5),
        p99Ms: at(0.99),
        callerCpuUs: Math.round((caller.user + caller.system) / n),
        echoCpuUs: Math.round((echo1 - echo0) / n),
      };
    } finally {
      exchange.close();
    }
  } finally {
    echo.disconnect();
    echo.kill();
  }
}

/** The child's next message (after sending `ask`, if any), within a bound. */
function reply<T>(
  child: ChildProcess,
  ask: string | undefined,
  timeoutMs = ROUND_TRIP_TIMEOUT_MS,
): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the echo process did not answer")), timeoutMs);
    child.once("message", (m) => {
      clearTimeout(timer);
      resolve(m as T);
    });
    if (ask !== undefined) child.send(ask);
  });
}

async function connect(mechanism: Mechanism, port: number, payload: Buffer): Promise<Exchange> {
  if (mechanism === "tcp") return connectTcp(port, payload);
  const options =
    mechanism === "grpc-stream" ? raftPeerChannelOptions(GRPC_DEFAULT_LIMITS) : GRPC_CLIENT_OPTIONS;
  const Client = grpc.makeGenericClientConstructor(ECHO_SERVICE, "Echo");
  const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), options);
  if (mechanism === "grpc-unary") {
    const unary = client["Unary"] as unknown as (
      req: Buffer,
      opts: grpc.CallOptions,
      cb: (e: grpc.ServiceError | null) => void,
    ) => void;
    return {
      roundTrip: () =>
        new Promise((resolve, reject) =>
          unary.call(client, payload, { deadline: Date.now() + ROUND_TRIP_TIMEOUT_MS }, (e) =>
            e ? reject(e) : resolve(),
          ),
        ),
      close: () => client.close(),
    };
  }
  const call = (client["Stream"] as unknown as () => grpc.ClientDuplexStream<Buffer, Buffer>).call(
    client,
  );
  return oneAtATime(
    (onReply) => call.on("data", onReply),
    () => call.write(payload),
    () => {
      call.end();
      client.close();
    },
    (onError) => call.on("error", onError),
  );
}

async function connectTcp(port: number, payload: Buffer): Promise<Exchange> {
  const socket = net.connect(port, "127.0.0.1");
  socket.setNoDelay(true);
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  const frame = Buffer.alloc(FRAME_HEADER_BYTES + payload.length);
  frame.writeUInt32BE(payload.length, 0);
  payload.copy(frame, FRAME_HEADER_BYTES);
  return oneAtATime(
    (onReply) => socket.on("data", frameReader(onReply)),
    () => socket.write(frame),
    () => socket.destroy(),
    (onError) => socket.on("error", onError),
  );
}

/** A message channel used as request/reply with one request in flight, each bounded in time. */
function oneAtATime(
  onReplies: (onReply: () => void) => void,
  write: () => void,
  close: () => void,
  onErrors: (onError: (e: Error) => void) => void,
): Exchange {
  let waiter:
    { resolve: () => void; reject: (e: Error) => void; timer: NodeJS.Timeout } | undefined;
  const settle = (e?: Error): void => {
    const w = waiter;
    if (!w) return;
    waiter = undefined;
    clearTimeout(w.timer);
    if (e) w.reject(e);
    else w.resolve();
  };
  onReplies(() => settle());
  onErrors((e) => settle(e));
  return {
    roundTrip: () =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => settle(new Error("no echo within 5 s")),
          ROUND_TRIP_TIMEOUT_MS,
        );
        waiter = { resolve, reject, timer };
        write();
      }),
    close,
  };
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

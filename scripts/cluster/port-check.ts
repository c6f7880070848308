// Finds ports already taken before `up` starts anything, so a clash is one clear message
// instead of nine crashed processes; and picks ports for tests outside the kernel's ephemeral
// range, where any outgoing connection on the machine may take a port between our check and
// our bind (a fresh-clone CI run lost a controller to EADDRINUSE that way).
import { readFileSync } from "node:fs";
import { createServer } from "node:net";

const EPHEMERAL_RANGE_FILE = "/proc/sys/net/ipv4/ip_local_port_range";
/** Linux's default, used when the file cannot be read. */
const EPHEMERAL_DEFAULT: readonly [number, number] = [32768, 60999];
/** Lowest port we hand out: above the well-known and most registered service ports. */
const LISTEN_PORT_MIN = 10_000;
const PORT_ATTEMPTS_MAX = 50;

export async function portInUse(host: string, port: number): Promise<boolean> {
  return new Promise<boolean>((resolveCheck) => {
    const server = createServer();
    server.once("error", () => resolveCheck(true));
    server.listen(port, host, () => server.close(() => resolveCheck(false)));
  });
}

/** The kernel's ephemeral port range [low, high]. */
export function ephemeralPortRange(): readonly [number, number] {
  try {
    const [low, high] = readFileSync(EPHEMERAL_RANGE_FILE, "utf8").trim().split(/\s+/).map(Number);
    if (Number.isInteger(low) && Number.isInteger(high) && low! <= high!) return [low!, high!];
  } catch {
    // not Linux, or /proc hidden: assume the default
  }
  return EPHEMERAL_DEFAULT;
}

/**
 * A random first port p such that p..p+span-1 lies outside the ephemeral range, within
 * LISTEN_PORT_MIN..65535. Throws when no such window exists.
 */
export function randomListenBase(span: number, random: () => number = Math.random): number {
  const [low, high] = ephemeralPortRange();
  const windows: Array<[number, number]> = []; // [first base, last base]
  if (low - span >= LISTEN_PORT_MIN) windows.push([LISTEN_PORT_MIN, low - span]);
  if (65535 - span + 1 > high) windows.push([high + 1, 65535 - span + 1]);
  const total = windows.reduce((sum, [a, b]) => sum + (b - a + 1), 0);
  if (total <= 0)
    throw new Error(`no ${span}-port window outside the ephemeral range ${low}-${high}`);
  let pick = Math.floor(random() * total);
  for (const [a, b] of windows) {
    if (pick <= b - a) return a + pick;
    pick -= b - a + 1;
  }
  throw new Error("unreachable");
}

/** A port outside the ephemeral range that is free right now. */
export async function freePort(host = "127.0.0.1"): Promise<number> {
  for (let attempt = 0; attempt < PORT_ATTEMPTS_MAX; attempt++) {
    const port = randomListenBase(1);
    if (!(await portInUse(host, port))) return port;
  }
  throw new Error(`no free port found in ${PORT_ATTEMPTS_MAX} attempts`);
}

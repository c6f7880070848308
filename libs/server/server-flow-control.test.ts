import * as grpc from "@grpc/grpc-js";
import { connect, type ClientHttp2Session } from "node:http2";
import { afterEach, describe, expect, it } from "vitest";
import { until } from "../common/poll.js";
import { raiseConnectionWindow, raiseStreamWindow } from "./server-flow-control.js";

const WINDOW_BYTES = 8 * 1024 * 1024;
const DEFAULT_WINDOW_BYTES = 65_535;
const WAIT_MS_MAX = 5_000;

const POLL = { intervalMs: 10 };

/** A bare HTTP/2 client: what window does the server grant it? */
async function windowsGranted(raise: boolean): Promise<{ stream: number; connection: number }> {
  const server = new grpc.Server();
  if (raise) expect(raiseStreamWindow(server, WINDOW_BYTES)).toBe(true);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) =>
      e ? reject(e) : resolve(p),
    ),
  );
  if (raise) expect(raiseConnectionWindow(server, WINDOW_BYTES)).toBe(true);
  cleanups.push(() => server.forceShutdown());
  const session: ClientHttp2Session = connect(`http://127.0.0.1:${port}`);
  cleanups.push(() => session.destroy());
  await until(
    "the server's SETTINGS",
    WAIT_MS_MAX,
    () =>
      (session.remoteSettings.initialWindowSize !== undefined &&
        session.state.remoteWindowSize !== undefined) ||
      undefined,
    POLL,
  );
  // The WINDOW_UPDATE follows the SETTINGS frame: give it its turn.
  if (raise)
    await until(
      "the connection WINDOW_UPDATE",
      WAIT_MS_MAX,
      () => (session.state.remoteWindowSize ?? 0) >= WINDOW_BYTES || undefined,
      POLL,
    );
  return {
    stream: session.remoteSettings.initialWindowSize!,
    connection: session.state.remoteWindowSize!,
  };
}

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

describe("server flow-control window", () => {
  it("grpc-js alone grants the 64 KiB default (what the raise is for)", async () => {
    const w = await windowsGranted(false);
    expect(w.stream).toBe(DEFAULT_WINDOW_BYTES);
    expect(w.connection).toBe(DEFAULT_WINDOW_BYTES);
  });

  it("raises the per-stream and the connection window of every accepted session", async () => {
    const w = await windowsGranted(true);
    expect(w.stream).toBe(WINDOW_BYTES);
    expect(w.connection).toBeGreaterThanOrEqual(WINDOW_BYTES);
  });
});

// grpc-js servers take no flow-control window option: every client connection starts with the
// HTTP/2 default receive window of 64 KiB, so a 64 KiB Produce waits a WINDOW_UPDATE round
// trip (two event-loop turns in two busy processes) per window. Raise both the per-stream
// window (initial SETTINGS) and the connection window of every session the server accepts.
// Best effort through grpc-js internals, checked at every step: if they change, the default
// window still works, only slower.
import type * as grpc from "@grpc/grpc-js";
import type { Http2Server, ServerHttp2Session } from "node:http2";

/** HTTP/2 caps a window at 2^31 - 1. */
const HTTP2_WINDOW_BYTES_MAX = 2 ** 31 - 1;

/** Call before bindAsync: the per-stream window goes out in the server's initial SETTINGS. */
export function raiseStreamWindow(server: grpc.Server, windowBytes: number): boolean {
  const options = (
    server as unknown as { commonServerOptions?: { settings?: Record<string, unknown> } }
  ).commonServerOptions;
  if (options === undefined || typeof options !== "object") return false;
  options.settings = {
    ...(options.settings ?? {}),
    initialWindowSize: Math.min(windowBytes, HTTP2_WINDOW_BYTES_MAX),
  };
  return true;
}

/** Call right after bindAsync: every later session gets a connection window of windowBytes. */
export function raiseConnectionWindow(server: grpc.Server, windowBytes: number): boolean {
  const servers = (server as unknown as { http2Servers?: unknown }).http2Servers;
  if (!(servers instanceof Map)) return false;
  for (const http2Server of servers.keys() as IterableIterator<Http2Server>) {
    if (typeof http2Server?.on !== "function") return false;
    http2Server.on("session", (session: ServerHttp2Session) => {
      try {
        session.setLocalWindowSize(Math.min(windowBytes, HTTP2_WINDOW_BYTES_MAX));
        // The Raft transport raises windows of its own sessions; tell it this one is done.
        (session as unknown as { __ternWindowRaised?: boolean }).__ternWindowRaised = true;
      } catch {
        // A session closing as it opens: nothing to raise.
      }
    });
  }
  return servers.size > 0;
}

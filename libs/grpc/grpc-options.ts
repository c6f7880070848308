// The one table of gRPC channel and server options. Every tern server, every client channel
// (services, the SDK, the CLI, tests) and the Raft transport derive theirs from it: explicit
// message bounds and a large HTTP/2 flow-control window so batches and snapshot chunks are
// not throttled by the 64 KiB default window, and a short reconnect backoff.
// The message bound itself is in libs/common/limits.ts (one definition for every process).
import type { ChannelOptions } from "@grpc/grpc-js";
import { GRPC_FLOW_CONTROL_WINDOW_BYTES, GRPC_MESSAGE_BYTES_MAX } from "../common/limits.js";

export { GRPC_FLOW_CONTROL_WINDOW_BYTES, GRPC_MESSAGE_BYTES_MAX };
/** Concurrent HTTP/2 streams per connection the server admits. */
export const GRPC_CONCURRENT_STREAMS_MAX = 1_000;
/** Client keepalive ping interval: a silently dead connection is noticed within about this. */
export const GRPC_KEEPALIVE_TIME_MS = 30_000;

/** What a channel (or server) of this process carries: window and message bounds. */
export interface GrpcTransportLimits {
  readonly flowControlWindowBytes: number;
  readonly messageBytesMax: number;
}

export const GRPC_DEFAULT_LIMITS: GrpcTransportLimits = {
  flowControlWindowBytes: GRPC_FLOW_CONTROL_WINDOW_BYTES,
  messageBytesMax: GRPC_MESSAGE_BYTES_MAX,
};

/** The options both ends of every tern channel share. */
export function grpcLimitOptions(
  limits: GrpcTransportLimits = GRPC_DEFAULT_LIMITS,
): ChannelOptions {
  return {
    "grpc-node.flow_control_window": limits.flowControlWindowBytes,
    "grpc.max_receive_message_length": limits.messageBytesMax,
    "grpc.max_send_message_length": limits.messageBytesMax,
  };
}

export const GRPC_SERVER_OPTIONS: ChannelOptions = {
  ...grpcLimitOptions(),
  "grpc.max_concurrent_streams": GRPC_CONCURRENT_STREAMS_MAX,
};

/**
 * Reconnect backoff of a channel to another tern process. grpc-js defaults to 1 s growing to
 * 120 s: a channel that failed while its node was down then refuses calls for seconds after
 * the node (or the new leader at that address) is back, which is most of a failover. 100 ms
 * to 1 s costs at most one refused connect per second per channel to a dead address.
 */
const GRPC_RECONNECT_OPTIONS: ChannelOptions = {
  "grpc.initial_reconnect_backoff_ms": 100,
  "grpc.max_reconnect_backoff_ms": 1_000,
};

/** For clients of tern services (other processes, the SDK, tests): every GrpcClientCache channel. */
export const GRPC_CLIENT_OPTIONS: ChannelOptions = {
  ...grpcLimitOptions(),
  ...GRPC_RECONNECT_OPTIONS,
  "grpc.keepalive_time_ms": GRPC_KEEPALIVE_TIME_MS,
};

/**
 * Raft peer channels: the client options with the host's own limits, a faster keepalive (a
 * dead peer must be noticed well within an election), a 2 s reconnect cap, and no grpc-js
 * retry layer: the transport reconnects a broken stream itself (Raft resends what was lost),
 * and that layer costs on every frame (it holds each of a long-lived stream's frames in a
 * retry buffer until 256 KiB have passed, and hands the next frame over only from the
 * previous one's write callback).
 */
export function raftPeerChannelOptions(limits: GrpcTransportLimits): ChannelOptions {
  return {
    ...GRPC_CLIENT_OPTIONS,
    ...grpcLimitOptions(limits),
    "grpc.keepalive_time_ms": 10_000,
    "grpc.keepalive_timeout_ms": 5_000,
    "grpc.max_reconnect_backoff_ms": 2_000,
    "grpc.enable_retries": 0,
  };
}

/** Health probes (readiness waits): the client options with a 500 ms reconnect cap. */
export const GRPC_HEALTH_PROBE_OPTIONS: ChannelOptions = {
  ...GRPC_CLIENT_OPTIONS,
  "grpc.max_reconnect_backoff_ms": 500,
};

/** "host:port" with IPv6 hosts bracketed. */
export function formatAddress(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

// gRPC channel/server limits shared by every tern process and client: explicit message
// bounds and a large HTTP/2 flow-control window so batches and snapshot chunks are not
// throttled by the 64 KiB default window.
// The message bound itself is in libs/common/limits.ts (one definition for every process).
import type { ChannelOptions } from "@grpc/grpc-js";
import { GRPC_FLOW_CONTROL_WINDOW_BYTES, GRPC_MESSAGE_BYTES_MAX } from "../common/limits.js";

export { GRPC_FLOW_CONTROL_WINDOW_BYTES, GRPC_MESSAGE_BYTES_MAX };
/** Concurrent HTTP/2 streams per connection the server admits. */
export const GRPC_CONCURRENT_STREAMS_MAX = 1_000;

export const GRPC_SERVER_OPTIONS: ChannelOptions = {
  "grpc-node.flow_control_window": GRPC_FLOW_CONTROL_WINDOW_BYTES,
  "grpc.max_receive_message_length": GRPC_MESSAGE_BYTES_MAX,
  "grpc.max_send_message_length": GRPC_MESSAGE_BYTES_MAX,
  "grpc.max_concurrent_streams": GRPC_CONCURRENT_STREAMS_MAX,
};

/**
 * Reconnect backoff of a channel to another tern process. grpc-js defaults to 1 s growing to
 * 120 s: a channel that failed while its node was down then refuses calls for seconds after
 * the node (or the new leader at that address) is back, which is most of a failover. 100 ms
 * to 1 s costs at most one refused connect per second per channel to a dead address.
 */
export const GRPC_RECONNECT_OPTIONS: ChannelOptions = {
  "grpc.initial_reconnect_backoff_ms": 100,
  "grpc.max_reconnect_backoff_ms": 1_000,
};

/** For clients of tern services (other processes, the SDK, tests). */
export const GRPC_CLIENT_OPTIONS: ChannelOptions = {
  ...GRPC_RECONNECT_OPTIONS,
  "grpc-node.flow_control_window": GRPC_FLOW_CONTROL_WINDOW_BYTES,
  "grpc.max_receive_message_length": GRPC_MESSAGE_BYTES_MAX,
  "grpc.max_send_message_length": GRPC_MESSAGE_BYTES_MAX,
};

/** "host:port" with IPv6 hosts bracketed. */
export function formatAddress(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

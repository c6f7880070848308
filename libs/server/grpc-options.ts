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

/** For clients of tern services (other processes, the SDK, tests). */
export const GRPC_CLIENT_OPTIONS: ChannelOptions = {
  "grpc-node.flow_control_window": GRPC_FLOW_CONTROL_WINDOW_BYTES,
  "grpc.max_receive_message_length": GRPC_MESSAGE_BYTES_MAX,
  "grpc.max_send_message_length": GRPC_MESSAGE_BYTES_MAX,
};

/** "host:port" with IPv6 hosts bracketed. */
export function formatAddress(host: string, port: number): string {
  return host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`;
}

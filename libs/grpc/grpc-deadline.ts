// The deadline of a gRPC call. grpc-js takes an absolute time and measures it against the
// host's own Date.now(), so this reads the host's clock, not the process runtime's: an injected
// or skewed Clock (the chaos suite's clock-skew fault) would lengthen or cut every call.
export function grpcDeadline(timeoutMs: number): number {
  return Date.now() + timeoutMs;
}

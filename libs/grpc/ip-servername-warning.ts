// grpc-js sets the TLS ServerName (SNI) to the target host even when it is an IP address
// (127.0.0.1 in a local cluster), and Node prints DEP0123 for that on stderr, once per process:
// noise on every CLI command. The certificate check is unaffected (IP SANs are matched), so
// this drops that one warning code and passes every other warning on.
let installed = false;

export function silenceIpServernameWarning(): void {
  if (installed) return;
  installed = true;
  const original = process.emitWarning.bind(process) as (...args: unknown[]) => void;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const options = rest[0];
    const code =
      typeof options === "object" && options !== null
        ? (options as { code?: string }).code
        : rest[1];
    if (code === "DEP0123") return;
    original(warning, ...rest);
  }) as typeof process.emitWarning;
}

// Bootstrap addresses ("HOST:PORT" of any controller) as the controller client's peer list.
// Their real node ids are unknown until the first metadata answer; the client only uses ids
// to follow NOT_CONTROLLER hints, so placeholder ids are safe (reads are served by any
// controller and writes are forwarded to the leader).
import { parseHostPort, type PeerAddress } from "../../common/config.js";

export const LOCAL_BOOTSTRAP = "127.0.0.1:9090";

export function parseBootstrap(bootstrap: string | readonly string[]): PeerAddress[] {
  const list = (typeof bootstrap === "string" ? bootstrap.split(",") : [...bootstrap])
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (list.length === 0)
    throw new Error("bootstrap: give at least one controller address HOST:PORT");
  return list.map((entry, index) => {
    // Accept the services' id@host:port form too.
    const m = /^(\d+)@(.+)$/.exec(entry);
    return m
      ? { id: Number(m[1]), ...parseHostPort(m[2]!, "bootstrap") }
      : { id: index, ...parseHostPort(entry, "bootstrap") };
  });
}

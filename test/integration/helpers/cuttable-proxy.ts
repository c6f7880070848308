// A TCP proxy in front of one process's listener that a test can cut. A process that advertises
// the proxy's address is reached by its peers (Raft transport, brokers, controllers) only
// through it, while the test still talks to its real listener: cutting the proxy drops
// everything sent to that process by the cluster, one direction of a partition, without
// iptables. cut() resets every proxied connection and closes new ones on accept until heal().
import { createConnection, createServer, type Server, type Socket } from "node:net";

/** Bound on connections proxied at once (a few per peer process). */
const CONNECTIONS_MAX = 256;

export class CuttableProxy {
  private readonly sockets = new Set<Socket>();
  private isCut = false;

  private constructor(
    private readonly server: Server,
    /** host:port the proxy listens on (what the process advertises). */
    readonly address: string,
  ) {}

  /** Listens on an ephemeral loopback port and forwards each connection to target (host:port). */
  static async start(target: string): Promise<CuttableProxy> {
    const [host, port] = splitAddress(target);
    let proxy: CuttableProxy | undefined;
    const server = createServer((inbound) => proxy!.accept(inbound, host, port));
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => resolve());
    });
    const bound = server.address();
    if (bound === null || typeof bound === "string") throw new Error("proxy has no TCP address");
    proxy = new CuttableProxy(server, `127.0.0.1:${bound.port}`);
    return proxy;
  }

  /** Drops every connection through the proxy and refuses new ones until heal(). */
  cut(): void {
    this.isCut = true;
    for (const s of this.sockets) s.resetAndDestroy();
    this.sockets.clear();
  }

  heal(): void {
    this.isCut = false;
  }

  async close(): Promise<void> {
    this.cut();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(inbound: Socket, host: string, port: number): void {
    if (this.isCut || this.sockets.size + 2 > CONNECTIONS_MAX) {
      inbound.resetAndDestroy();
      return;
    }
    const outbound = createConnection({ host, port });
    const pair = [inbound, outbound];
    for (const s of pair) {
      this.sockets.add(s);
      s.on("error", () => undefined); // the close below ends both halves
      s.on("close", () => {
        this.sockets.delete(s);
        for (const other of pair) if (other !== s) other.destroy();
      });
    }
    inbound.pipe(outbound);
    outbound.pipe(inbound);
  }
}

function splitAddress(address: string): [string, number] {
  const at = address.lastIndexOf(":");
  const port = Number(address.slice(at + 1));
  if (at <= 0 || !Number.isInteger(port)) throw new Error(`bad address ${address}`);
  return [address.slice(0, at), port];
}

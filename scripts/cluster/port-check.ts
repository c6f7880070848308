// Finds ports already taken before `up` starts anything, so a clash is one clear message
// instead of nine crashed processes.
import { createServer } from "node:net";

export async function portInUse(host: string, port: number): Promise<boolean> {
  return new Promise<boolean>((resolveCheck) => {
    const server = createServer();
    server.once("error", () => resolveCheck(true));
    server.listen(port, host, () => server.close(() => resolveCheck(false)));
  });
}

/** A port the OS considers free right now (bind to 0, read, close). */
export async function freePort(host = "127.0.0.1"): Promise<number> {
  return new Promise<number>((resolveFree, rejectFree) => {
    const server = createServer();
    server.once("error", rejectFree);
    server.listen(0, host, () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolveFree(port));
    });
  });
}

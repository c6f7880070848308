// The partition mechanism against the real kernel: a process in a node's cgroup cannot reach a
// cut address:port, can reach it again after heal, and the chain is gone after close. Needs
// root, iptables (apt-get install -y iptables) and cgroup2; fails loudly without them.
import { spawn } from "node:child_process";
import { createServer, type Server } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { NodeCgroups } from "./cgroups.js";
import { NetworkPartitioner } from "./network-partition.js";

const HOST = "127.0.0.77";
let server: Server;
let port = 0;
const cgroups = new NodeCgroups(`tern-chaos-test-${process.pid}`);
const partitioner = new NetworkPartitioner(cgroups, `t${process.pid % 100_000}`);

/** Runs a client inside node `name`'s cgroup: "ok" when it connected within 1.5 s. */
function probe(name: string): Promise<string> {
  const script = `setTimeout(() => { const s = require("net").connect(${port}, "${HOST}"); const t = setTimeout(() => { console.log("timeout"); process.exit(0); }, 1500); s.on("connect", () => { console.log("ok"); clearTimeout(t); s.destroy(); }); s.on("error", (e) => { console.log("error " + e.code); process.exit(0); }); }, 300);`;
  const child = spawn(process.execPath, ["-e", script], { stdio: ["ignore", "pipe", "inherit"] });
  cgroups.place(name, child.pid!);
  let out = "";
  child.stdout.on("data", (d) => (out += String(d)));
  return new Promise((resolve) => child.on("exit", () => resolve(out.trim())));
}

beforeAll(async () => {
  server = createServer((s) => s.end());
  await new Promise<void>((r) => server.listen(0, HOST, () => r()));
  port = (server.address() as { port: number }).port;
});

afterAll(() => {
  partitioner.close();
  cgroups.removeAll();
  server?.close();
});

describe("NetworkPartitioner", () => {
  it("cuts a node from a peer's address:port, heals, and removes its chain", async () => {
    partitioner.ensureAvailable();
    expect(await probe("a")).toBe("ok");
    expect(await partitioner.cut([{ name: "a", address: "127.0.0.1:1" }], [{ name: "b", address: `${HOST}:${port}` }])).toBe(2);
    expect(await probe("a")).toBe("timeout"); // a's packets to b are dropped
    expect(await probe("c")).toBe("ok"); // an uninvolved node still reaches b
    await partitioner.heal();
    expect(await probe("a")).toBe("ok");
    partitioner.close();
    expect(execFileSync("iptables", ["-S", "OUTPUT"], { encoding: "utf8" })).not.toContain("TERN-CHAOS-t");
  }, 30_000);
});

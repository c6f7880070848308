// The partition mechanism against the real kernel: a process in a node's cgroup cannot reach a
// cut address:port, can reach it again after heal, and the chain is gone after close. Needs
// root, iptables (apt-get install -y iptables) and cgroup2; fails loudly without them.
import { spawn } from "node:child_process";
import { createServer, type Server } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { until } from "../../../libs/common/poll.js";
import { NodeCgroups } from "./cgroups.js";
import { NetworkPartitioner, parseConnections, parseDroppedPackets } from "./network-partition.js";

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
    expect(
      await partitioner.cut(
        [{ name: "a", address: "127.0.0.1:1" }],
        [{ name: "b", address: `${HOST}:${port}` }],
      ),
    ).toBe(2);
    expect(await probe("a")).toBe("timeout"); // a's packets to b are dropped
    expect(await probe("c")).toBe("ok"); // an uninvolved node still reaches b
    await partitioner.heal();
    expect(await probe("a")).toBe("ok");
    partitioner.close();
    expect(execFileSync("iptables", ["-S", "OUTPUT"], { encoding: "utf8" })).not.toContain(
      "TERN-CHAOS-t",
    );
  }, 30_000);

  it("parses ss's established connections with their processes", () => {
    const text =
      '0      0      127.0.0.1:40112   127.0.0.10:10405 users:(("node",pid=1234,fd=25),("node",pid=1240,fd=3))\n\n0 0 127.0.0.1:1 127.0.0.2:2\n';
    expect(parseConnections(text)).toEqual([
      { local: "127.0.0.1:40112", peer: "127.0.0.10:10405", pids: [1234, 1240] },
      { local: "127.0.0.1:1", peer: "127.0.0.2:2", pids: [] },
    ]);
  });

  it("stops a stream the cut-off node opened before the cut: the server's pushes no longer arrive", async () => {
    const streamHost = "127.0.0.78";
    // The server (node "srv") pushes a byte every 50 ms on each connection; the client (node "cli") prints what it got.
    const serverScript = `const s = require("net").createServer((c) => { const t = setInterval(() => c.write("x"), 50); c.on("error", () => {}); c.on("close", () => clearInterval(t)); }); s.listen(0, "${streamHost}", () => console.log(s.address().port));`;
    const srv = spawn(process.execPath, ["-e", serverScript], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    cgroups.place("srv", srv.pid!);
    const srvPort = await new Promise<number>((resolve) =>
      srv.stdout.once("data", (d) => resolve(Number(String(d).trim()))),
    );
    const clientScript = `let n = 0; const s = require("net").connect(${srvPort}, "${streamHost}"); s.on("data", (d) => { n += d.length; }); s.on("error", () => {}); setInterval(() => console.log(n), 100);`;
    const cli = spawn(process.execPath, ["-e", clientScript], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    cgroups.place("cli", cli.pid!);
    let received = 0;
    let changedAt = performance.now();
    cli.stdout.on("data", (d) => {
      const last = String(d).trim().split("\n").pop();
      if (last && Number(last) !== received) {
        received = Number(last);
        changedAt = performance.now();
      }
    });
    try {
      await expect.poll(() => received, { timeout: 10_000 }).toBeGreaterThan(5);
      await partitioner.cut(
        [{ name: "cli", address: "127.0.0.1:1" }],
        [{ name: "srv", address: `${streamHost}:${srvPort}` }],
      );
      // Without rules for the open connection, the server's next pushes (a congestion window's
      // worth, ~10 segments: half a second here) still arrive although the client's ACKs are
      // dropped; that is how a cut-off coordinator went on hearing of new topics. With them,
      // only what was in flight (and the client's 100 ms reporting lag, longer on a loaded
      // machine) can still show: wait for the count to hold still for 500 ms, bounded.
      await until(
        "the client's count to stop moving",
        5_000,
        () => (performance.now() - changedAt >= 500 ? true : undefined),
        { intervalMs: 20 },
      );
      const atCut = received;
      await new Promise((r) => setTimeout(r, 1_500));
      expect(received).toBe(atCut);
      await partitioner.heal();
      await expect.poll(() => received, { timeout: 20_000 }).toBeGreaterThan(atCut);
    } finally {
      cli.kill("SIGKILL");
      srv.kill("SIGKILL");
      await partitioner.heal();
    }
  }, 60_000);
});

describe("parseDroppedPackets", () => {
  it("sums the DROP rules' packet counters of an iptables -L -v -x -n listing", () => {
    const listing = [
      "Chain TERN-CHAOS-1 (1 references)",
      "    pkts      bytes target     prot opt in     out     source               destination",
      "      12      720 DROP       6    --  *      *       0.0.0.0/0            127.0.0.12           tcp dpt:102",
      "       0        0 DROP       6    --  *      *       0.0.0.0/0            127.0.0.13           tcp dpt:110",
      "       3      180 DROP       6    --  *      *       0.0.0.0/0            127.0.0.1            tcp dpt:5001",
    ].join("\n");
    expect(parseDroppedPackets(listing)).toBe(15);
    expect(parseDroppedPackets("Chain X (0 references)\n")).toBe(0);
  });
});

// Replacing a dead controller (docs/controller.md): SIGKILL one controller for good, remove it
// from the quorum, start a new controller with a new id and an empty data dir, add it, then
// kill another original controller: the quorum {survivor, newcomer} must still elect and
// serve everything acknowledged before, which proves the newcomer is a voter with the data.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { parsePeers, type PeerAddress } from "../../libs/common/config.js";
import { silentLogger } from "../../libs/common/logger.js";
import { ControllerClient } from "../../libs/metadata/controller-client.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { HOST, METRICS_PORT_OFFSET, type ProcessSpec } from "../../scripts/cluster/layout.js";
import { processAlive, spawnService, terminate } from "../../scripts/cluster/process-control.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { until } from "../../libs/common/poll.js";

const POLL_MS = 100;
const logger = silentLogger();
let failures = 0;
let cluster: ProcessCluster;
let dataDir: string;
let basePort: number;
let newcomerPid: number | undefined;
const clients: ControllerClient[] = [];

const waitFor = <T>(
  what: string,
  timeoutMs: number,
  probe: () => Promise<T | undefined>,
): Promise<T> => until(what, timeoutMs, probe, { intervalMs: POLL_MS });

function clientFor(controllers: PeerAddress[]): ControllerClient {
  const c = new ControllerClient({ controllers, logger, requestTimeoutMs: 3_000, attemptsMax: 20 });
  clients.push(c);
  return c;
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-controller-membership-"));
  basePort = await freeBasePort({ controllers: 4, brokers: 0, coordinators: 0 });
  cluster = await startCluster({
    dataDir,
    controllers: 3,
    brokers: 0,
    coordinators: 0,
    basePort,
    healthTimeoutMs: 60_000,
    env: { TERN_LOG_LEVEL: "warn" },
  });
});

afterEach((ctx) => {
  if (ctx.task.result?.state === "fail") failures += 1;
});

afterAll(async () => {
  for (const c of clients) c.close();
  if (newcomerPid !== undefined && processAlive(newcomerPid))
    await terminate([newcomerPid], { termTimeoutMs: 5_000 });
  await cluster?.stop({ termTimeoutMs: 5_000 });
  // Kept on failure: the process logs are under <dataDir>/logs.
  if (dataDir && failures === 0) rmSync(dataDir, { recursive: true, force: true });
  else if (dataDir) console.error(`controller test data and logs kept in ${dataDir}`);
});

it("replaces a dead controller through a membership change", async () => {
  const original = parsePeers(cluster.controllers, "controllers");
  const newcomer: PeerAddress = { id: 3, host: HOST, port: basePort + 3 };
  const client = clientFor([...original, newcomer]);
  const leaderOf = async (ids: number[]): Promise<number> =>
    waitFor(`a leader among ${ids.join(",")}`, 20_000, async () => {
      const views = await Promise.all(ids.map((id) => client.describeCluster(id)));
      const l = views[0]!.leader;
      return l >= 0 && ids.includes(l) && views.every((v) => v.leader === l) ? l : undefined;
    });

  // Broker registration is needed for topics: one registration without heartbeats lives a lease.
  await client.registerNode({
    nodeId: 0,
    role: "broker",
    address: "127.0.0.1:1",
    incarnation: "x",
  });
  expect(
    (await client.createTopics([{ name: "before", partitions: 2, replicationFactor: 1 }]))[0]!
      .error,
  ).toBeUndefined();

  // The victim is the current leader: the hardest case.
  const victim = await leaderOf(original.map((c) => c.id));
  cluster.kill("controller", victim, "SIGKILL");
  expect(await cluster.waitForExit("controller", victim, 5_000)).toBe(true);
  const survivors = original.filter((c) => c.id !== victim);
  await leaderOf(survivors.map((c) => c.id));
  await client.removeController(victim);
  await waitFor("the victim removed from the voters", 10_000, async () => {
    const s = await client.describeCluster(survivors[0]!.id);
    return s.voters
      .filter((v) => v.voter)
      .map((v) => v.nodeId)
      .includes(victim)
      ? undefined
      : true;
  });

  // The newcomer: new id, empty data dir, the new quorum in --controllers.
  const spec: ProcessSpec = {
    role: "controller",
    id: newcomer.id,
    port: newcomer.port,
    metricsPort: newcomer.port + METRICS_PORT_OFFSET,
    address: `${HOST}:${newcomer.port}`,
    metricsAddress: `${HOST}:${newcomer.port + METRICS_PORT_OFFSET}`,
    dataDir: join(dataDir, "controller-3"),
    logFile: join(dataDir, "logs", "controller-3.log"),
  };
  const quorum = [...survivors, newcomer].map((c) => `${c.id}@${c.host}:${c.port}`).join(",");
  newcomerPid = spawnService(spec, quorum, { TERN_LOG_LEVEL: "warn" }).pid;
  await client.addController(newcomer.id, spec.address);
  const expectedVoters = [...survivors.map((c) => c.id), newcomer.id].sort();
  const version = (await client.metadata({ linearizable: true })).version;
  await waitFor("the newcomer caught up as a voter", 30_000, async () => {
    const s = await client.describeCluster(newcomer.id);
    const voters = s.voters
      .filter((v) => v.voter)
      .map((v) => v.nodeId)
      .sort();
    return JSON.stringify(voters) === JSON.stringify(expectedVoters) &&
      BigInt(s.metadataVersion) >= BigInt(version) &&
      s.leader >= 0
      ? true
      : undefined;
  });

  // Kill one more original: only {survivor, newcomer} remain, a majority of the new quorum.
  const second = survivors[0]!.id;
  cluster.kill("controller", second, "SIGKILL");
  expect(await cluster.waitForExit("controller", second, 5_000)).toBe(true);
  const remaining = [survivors[1]!.id, newcomer.id];
  await leaderOf(remaining);
  const m = await waitFor("linearizable metadata from the new quorum", 20_000, async () =>
    client.metadata({ linearizable: true }),
  );
  expect(m.topics.map((t) => t.name)).toContain("before");
  expect(m.controllers?.map((c) => c.id).sort()).toEqual(expectedVoters);
  await client.registerNode({
    nodeId: 1,
    role: "broker",
    address: "127.0.0.1:2",
    incarnation: "y",
  });
  const [after] = await client.createTopics([
    { name: "after", partitions: 1, replicationFactor: 1 },
  ]);
  expect(after!.error).toBeUndefined();
});

// A partition replica that fails to open does not keep the replicas after it in the metadata
// closed (before, one failing open ended the whole pass, every pass), and it opens on a later
// pass once the cause is gone. The failure is real: its segment directory is a plain file.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ManualClock } from "../../libs/runtime/testing/manual-clock.js";
import { silentLogger } from "../../libs/common/logger.js";
import type { ClusterMetadata } from "../../libs/metadata/types.js";
import { openRaftHost, type RaftHost } from "../../libs/raft-host/host.js";
import { RecordCache } from "../../libs/storage/record-cache.js";
import { ReplicaManager } from "./replica-manager.js";

const logger = silentLogger();
let host: RaftHost;
let dir: string;
let replicas: ReplicaManager;

const metadata: ClusterMetadata = {
  version: "1",
  controllerLeader: 0,
  nodes: [{ nodeId: 0, role: "broker", address: "127.0.0.1:1", alive: true, incarnation: "1" }],
  topics: [
    {
      name: "x",
      internal: false,
      role: "broker",
      config: {},
      partitions: [0, 1, 2].map((p) => ({
        topic: "x",
        partition: p,
        replicas: [0],
        leader: 0,
        leaderTerm: 1,
      })),
    },
  ],
};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tern-replica-open-"));
  host = await openRaftHost({
    nodeId: 0,
    dataDir: dir,
    logger,
    tickMs: 10,
    electionTicks: 10,
    heartbeatTicks: 2,
    metrics: false,
  });
  replicas = new ReplicaManager({
    host,
    nodeId: 0,
    logger,
    clock: new ManualClock(Date.now()),
    housekeepingIntervalMs: 60_000,
    tickEntryIntervalMs: 3_600_000,
    offsetsStateMachine: () => {
      throw new Error("no offsets partitions here");
    },
    reportLeaders: async () => undefined,
    storage: {
      dir: join(dir, "partitions"),
      cache: new RecordCache(1024 * 1024),
      indexIntervalBytes: 4096,
      readAheadBytes: 64 * 1024,
    },
  });
}, 30_000);

afterAll(async () => {
  replicas?.close();
  await host?.close();
  rmSync(dir, { recursive: true, force: true });
});

it("opens the replicas after one that fails, and the failed one on a later pass", async () => {
  mkdirSync(join(dir, "partitions"), { recursive: true });
  writeFileSync(join(dir, "partitions", "x-1"), "not a directory");
  await replicas.update(metadata);
  expect(replicas.local("x", 0)).toBeDefined();
  expect(replicas.local("x", 1)).toBeUndefined();
  expect(replicas.local("x", 2)).toBeDefined();
  rmSync(join(dir, "partitions", "x-1"));
  await replicas.update(metadata);
  expect(replicas.local("x", 1)).toBeDefined();
});

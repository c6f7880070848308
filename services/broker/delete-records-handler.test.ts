// The DeleteRecords handler over a real single-node raft host (in-process, temp dir): the codes
// of each refusal, the low watermark it answers, and that Fetch and ListOffsets follow it.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { systemClock } from "../../libs/runtime/system-clock.js";
import { silentLogger } from "../../libs/common/logger.js";
import { openRaftHost, type RaftHost } from "../../libs/raft-host/host.js";
import { until } from "../../libs/common/poll.js";
import { createDeleteRecordsHandler } from "./delete-records-handler.js";
import { createFetchHandler } from "./fetch-handler.js";
import { createListOffsetsHandler } from "./list-offsets-handler.js";
import { LocalPartition, type PartitionDirectory } from "./local-partition.js";
import { createProduceHandler } from "./produce-handler.js";
import { PartitionService } from "./partition-service/partition-service.js";
import { partitionForTest } from "./testing/partition-for-test.js";
import { acceptsPartial } from "../../libs/server/testing/accepts-partial.js";

const logger = silentLogger();
let host: RaftHost;
let dir: string;
let local: LocalPartition;

const directory: PartitionDirectory = {
  local: (t, p) => (t === "a" && p === 0 ? local : undefined),
  lookup: (t, p) =>
    t === "__consumer_offsets"
      ? "internal"
      : (t === "a" || t === "remote") && p === 0
        ? "ok"
        : "unknown",
  endpoint: (id) =>
    id === 7 ? { nodeId: 7, address: "127.0.0.1:7777" } : { nodeId: -1, address: "" },
  metadataLeader: (t) => (t === "remote" ? 7 : -1),
  locals: () => [local],
};
const service = new PartitionService({
  directory,
  verifier: { verify: async () => ({ error: "NONE", message: "" }), forget: () => undefined },
  clock: systemClock,
  logger,
});
const deleteRecords = acceptsPartial(createDeleteRecordsHandler(service));
const produce = acceptsPartial(createProduceHandler(service));
const fetchHandler = acceptsPartial(createFetchHandler(service));
/** Proto records: the gRPC edge's decode_records form. */
const fetch = (request: object): ReturnType<typeof fetchHandler> =>
  fetchHandler({ decodeRecords: true, ...request });
const listOffsets = acceptsPartial(createListOffsetsHandler(service));

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tern-delete-records-"));
  host = await openRaftHost({
    nodeId: 0,
    dataDir: dir,
    logger,
    tickMs: 10,
    electionTicks: 10,
    heartbeatTicks: 2,
    metrics: false,
  });
  const sm = partitionForTest("a", 0);
  local = new LocalPartition(
    "a",
    0,
    await host.openGroup({ groupId: "a/0", initialVoters: [0], stateMachine: sm }),
    sm,
  );
  await until("leader", 20_000, () => (local.group.isLeader() ? true : undefined), {
    intervalMs: 20,
  });
}, 30_000);

afterAll(async () => {
  await host?.close();
  rmSync(dir, { recursive: true, force: true });
});

const one = async (topic: string, partition: number, offset: string): Promise<any> =>
  ((await deleteRecords({ partitions: [{ topic, partition, offset }] })) as any).partitions[0];

it("refuses what it cannot do, each with Kafka's code", async () => {
  expect(await one("nope", 0, "0")).toMatchObject({
    errorCode: "UNKNOWN_TOPIC_OR_PARTITION",
    lowWatermark: "-1",
  });
  expect(await one("__consumer_offsets", 0, "0")).toMatchObject({
    errorCode: "INVALID_TOPIC_EXCEPTION",
  });
  expect(await one("remote", 0, "0")).toMatchObject({
    errorCode: "NOT_LEADER_OR_FOLLOWER",
    leader: { nodeId: 7, address: "127.0.0.1:7777" },
  });
  expect(await one("a", 0, "-2")).toMatchObject({ errorCode: "OFFSET_OUT_OF_RANGE" });
  const twice = (await deleteRecords({
    partitions: [
      { topic: "a", partition: 0, offset: "0" },
      { topic: "a", partition: 0, offset: "0" },
    ],
  })) as any;
  expect(twice.partitions.map((p: any) => p.errorCode)).toEqual(["NONE", "INVALID_REQUEST"]);
});

it("moves the log start: the answer, ListOffsets earliest and Fetch follow it", async () => {
  const produced = (await produce({
    partitions: [
      {
        topic: "a",
        partition: 0,
        batch: {
          producerId: "-1",
          records: ["r0", "r1", "r2", "r3"].map((v) => ({ value: Buffer.from(v) })),
        },
      },
    ],
  })) as any;
  expect(produced.partitions[0].errorCode).toBe("NONE");
  expect(await one("a", 0, "5")).toMatchObject({
    errorCode: "OFFSET_OUT_OF_RANGE",
    lowWatermark: "-1",
  });
  expect(await one("a", 0, "2")).toMatchObject({ errorCode: "NONE", lowWatermark: "2" });
  expect(await one("a", 0, "1")).toMatchObject({ errorCode: "NONE", lowWatermark: "2" });
  const earliest = (await listOffsets({
    partitions: [{ topic: "a", partition: 0, timestampMs: "-2" }],
  })) as any;
  expect(earliest.partitions[0].offset).toBe("2");
  const below = (await fetch({
    maxWaitMs: 0,
    partitions: [{ topic: "a", partition: 0, fetchOffset: "1" }],
  })) as any;
  expect(below.partitions[0]).toMatchObject({
    errorCode: "OFFSET_OUT_OF_RANGE",
    logStartOffset: "2",
  });
  const at = (await fetch({
    maxWaitMs: 0,
    partitions: [{ topic: "a", partition: 0, fetchOffset: "2" }],
  })) as any;
  expect(
    at.partitions[0].batches[0].records.map((r: any) => Buffer.from(r.value).toString()),
  ).toEqual(["r2", "r3"]);
  expect(await one("a", 0, "-1")).toMatchObject({ errorCode: "NONE", lowWatermark: "4" });
});

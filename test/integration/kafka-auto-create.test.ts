// Kafka's auto.create.topics.enable (`--kafka-auto-create-topics true`) against a real cluster:
// a Metadata request that allows it creates a missing topic with CreateTopics' defaults (1
// partition, replication factor 3) and answers it; one that does not allow it (consumers,
// admin clients) gets UNKNOWN_TOPIC_OR_PARTITION and creates nothing; a name the controller
// refuses is answered with its code. The default (off) is what every other suite runs with.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../../libs/common/poll.js";
import type { KafkaReader } from "../../libs/records/kafka-codec.js";
import { API } from "../../services/kafka/api-versions.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { kafkaRequest, KafkaRawConnection } from "./helpers/kafka-raw-client.js";

const SHAPE = { controllers: 1, brokers: 3, coordinators: 1 };
const UNKNOWN_TOPIC_OR_PARTITION = 3;
const INVALID_TOPIC_EXCEPTION = 17;

let cluster: ProcessCluster;
let dataDir: string;
let kafkaPort: number;

interface TopicAnswer {
  error: number;
  name: string;
  partitions: Array<{ error: number; leader: number; replicas: number[] }>;
}

/** Metadata v4 (allow_auto_topic_creation is v4+) of some topics: each topic's answer. */
async function metadataV4(
  names: readonly string[],
  allowAutoCreate: boolean,
): Promise<TopicAnswer[]> {
  const c = await KafkaRawConnection.open(kafkaPort);
  try {
    c.s.write(
      kafkaRequest(API.Metadata, 4, 1, (w) => {
        w.array(names, (x, n) => x.string(n));
        w.bool(allowAutoCreate);
      }),
    );
    const r: KafkaReader = (await c.next(15_000))!.body;
    r.int32(); // throttle
    r.array((x) => (x.int32(), x.string(), x.int32(), x.nullableString()));
    r.nullableString(); // cluster id
    r.int32(); // controller id
    return r
      .array((x) => ({
        error: x.int16(),
        name: x.string(),
        internal: x.bool(),
        partitions: x.array((y) => {
          const p = { error: y.int16(), index: y.int32(), leader: y.int32() };
          const replicas = y.array((z) => z.int32());
          y.array((z) => z.int32()); // isr
          return { error: p.error, leader: p.leader, replicas };
        }),
      }))
      .map(({ error, name, partitions }) => ({ error, name, partitions }));
  } finally {
    c.close();
  }
}

describe("auto.create.topics.enable on the Kafka listener", () => {
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "tern-auto-create-"));
    cluster = await startCluster({
      dataDir,
      ...SHAPE,
      basePort: await freeBasePort(SHAPE),
      healthTimeoutMs: 150_000,
      extraArgs: ["--kafka-auto-create-topics", "true"],
    });
    kafkaPort = cluster.spec("broker", 0).kafkaPort!;
  }, 240_000);

  afterAll(async () => {
    await cluster?.stop({ termTimeoutMs: 5_000 });
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it("a Metadata request that does not allow it creates nothing", async () => {
    expect(await metadataV4(["auto-not-allowed"], false)).toEqual([
      { error: UNKNOWN_TOPIC_OR_PARTITION, name: "auto-not-allowed", partitions: [] },
    ]);
    expect(await metadataV4(["auto-not-allowed"], false)).toMatchObject([
      { error: UNKNOWN_TOPIC_OR_PARTITION },
    ]);
  });

  it("a Metadata request that allows it creates the missing topic with the defaults; a bad name gets the controller's code", async () => {
    const [created, refused] = await metadataV4(["auto-created", "bad name!"], true);
    expect(created).toMatchObject({ error: 0, name: "auto-created" });
    expect(created!.partitions).toHaveLength(1);
    expect(created!.partitions[0]!.replicas).toHaveLength(3);
    expect(refused).toEqual({ error: INVALID_TOPIC_EXCEPTION, name: "bad name!", partitions: [] });
    // Its leader follows; asked again (even without allowing creation) it is simply there.
    const led = await until(
      "a leader for the auto-created topic",
      30_000,
      async () => {
        const [t] = await metadataV4(["auto-created"], false);
        return t!.partitions[0]!.leader >= 0 ? t : undefined;
      },
      { intervalMs: 250 },
    );
    expect(led).toMatchObject({ error: 0, name: "auto-created" });
    expect(led.partitions[0]!.error).toBe(0);
  });
});

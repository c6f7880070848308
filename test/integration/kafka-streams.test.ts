// A Kafka Streams application (kafka-streams 4.4.0 from Maven Central, test/java StreamsCounter)
// with processing.guarantee=exactly_once_v2 runs unchanged against tern's Kafka listeners on a
// real local cluster: it counts words through a repartition topic (which Streams purges with
// DeleteRecords) into a state store whose changelog Streams creates compacted, and writes
// "word=n" for every input record (the store's cache is off). Exactly once means a word read n
// times has the committed outputs word=1 .. word=n, each once: a record counted twice, or the
// output of an aborted transaction read, shows as a repeated value, a lost one as a gap. Checked
// across a SIGKILL of the application mid-run (restarted with the same application.id and state
// dir: its open transaction aborts, its store restores from the changelog), and across SIGKILLs
// of its transaction coordinator and then of a broker leading an input and a changelog
// partition (the group's coordinator when it leads both) while it runs. Own cluster: 1
// controller, 3 brokers, 3 coordinators. Needs java and mvn (.ci/run installs them); skipped
// without java.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import kafkajs from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Admin } from "../../libs/client/index.js";
import { until } from "../../libs/common/poll.js";
import { TRANSACTION_STATE_TOPIC } from "../../libs/metadata/types.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { hasJava, javaClasspath, startJava, type JavaProcess } from "./helpers/java-client.js";

const { Kafka, logLevel } = kafkajs;

const JAVA = hasJava();
if (!JAVA)
  process.stderr.write(
    "kafka-streams.test.ts SKIPPED: needs java and mvn; install with: apt-get install -y openjdk-17-jdk-headless maven\n",
  );

const SHAPE = { controllers: 1, brokers: 3, coordinators: 3 };
const WORDS = 10;

let cluster: ProcessCluster;
let admin: Admin;
let classpath: string;
let dataDir: string;
/** The brokers' Kafka listeners. */
let bootstrap: string;

/** Creates the input and output topics (3 partitions, 3 replicas) and writes n words to the input. */
async function prepare(name: string, n: number): Promise<{ input: string; output: string }> {
  const input = `${name}-in`;
  const output = `${name}-out`;
  const created = await admin.createTopics(
    [input, output].map((t) => ({ name: t, partitions: 3, replicationFactor: 3 })),
  );
  for (const c of created) expect(c.error ?? null).toBeNull();
  await admin.waitForLeaders([input, output]);
  const kafka = new Kafka({ brokers: bootstrap.split(","), logLevel: logLevel.NOTHING });
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  try {
    await producer.send({
      topic: input,
      acks: -1,
      messages: Array.from({ length: n }, (_, i) => ({ key: `r-${i}`, value: `w${i % WORDS}` })),
    });
  } finally {
    await producer.disconnect();
  }
  return { input, output };
}

/** Starts StreamsCounter as application app-<name> with its state under the test's data dir. */
function startCounter(name: string, n: number, delayMs: number): JavaProcess {
  return startJava(
    classpath,
    "StreamsCounter",
    [
      bootstrap,
      `${name}-in`,
      `${name}-out`,
      `app-${name}`,
      join(dataDir, `streams-${name}`),
      String(delayMs),
      String(n),
      "60000",
    ],
    90_000,
  );
}

const outputsOf = (p: JavaProcess): number =>
  p.events.filter((e) => e.event === "progress").at(-1)?.outputs ?? 0;

/** The run's "done" event; fails with its output unless it exited 0 with every output read. */
async function finished(p: JavaProcess): Promise<Record<string, any>> {
  const r = await p.exited;
  const done = r.events.find((e) => e.event === "done");
  expect(
    r.code,
    `${JSON.stringify(r.events.filter((e) => e.event !== "progress"))} ${r.stderr}`,
  ).toBe(0);
  expect(done?.timedOut).toBe(false);
  return done!;
}

/** Every word's committed counts are exactly 1 .. n/WORDS, each once. */
function expectExactlyOnce(values: readonly string[], n: number): void {
  const counts = new Map<string, number[]>();
  for (const v of values) {
    const [word, count] = v.split("=");
    counts.set(word!, [...(counts.get(word!) ?? []), Number(count)]);
  }
  const expected = Array.from({ length: n / WORDS }, (_, i) => i + 1);
  expect([...counts.keys()].sort()).toEqual(
    Array.from({ length: WORDS }, (_, i) => `w${i}`).sort(),
  );
  for (const [word, seen] of counts)
    expect(
      [...seen].sort((a, b) => a - b),
      `the counts of ${word}`,
    ).toEqual(expected);
  expect(values.length).toBe(n);
}

describe.skipIf(!JAVA)(
  "Kafka Streams exactly_once_v2 (kafka-streams 4.4) through tern's Kafka listener",
  () => {
    beforeAll(async () => {
      classpath = javaClasspath();
      dataDir = mkdtempSync(join(tmpdir(), "tern-kafka-streams-"));
      cluster = await startCluster({
        dataDir,
        ...SHAPE,
        basePort: await freeBasePort(SHAPE),
        env: {
          TERN_LOG_LEVEL: "warn",
          TERN_TXN_STATE_PARTITIONS: "3",
          TERN_OFFSETS_PARTITIONS: "3",
        },
        healthTimeoutMs: 180_000,
      });
      bootstrap = [0, 1, 2]
        .map((i) => `127.0.0.1:${cluster.spec("broker", i).kafkaPort}`)
        .join(",");
      admin = new Admin({ bootstrap: cluster.addresses("controller").join(",") });
    }, 300_000);

    afterAll(async () => {
      await admin?.close();
      await cluster?.stop({ termTimeoutMs: 5_000 });
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    }, 60_000);

    it("counts every word exactly once through a repartition and a compacted changelog, across its SIGKILL and restart", async () => {
      const n = 600;
      await prepare("crash", n);
      // 10 ms a count: several seconds of work, killed after its first commits with a
      // transaction open, restarted with the same application.id and state dir.
      const first = startCounter("crash", n, 10);
      await until("the first instance's committed outputs", 60_000, () =>
        outputsOf(first) >= 60 ? true : undefined,
      );
      first.kill("SIGKILL");
      await first.exited;
      expect(outputsOf(first)).toBeLessThan(n);
      const done = await finished(startCounter("crash", n, 0));
      expectExactlyOnce(done.values as string[], n);
      const [changelog, repartition] = await admin.describeTopics([
        "app-crash-counts-changelog",
        "app-crash-by-word-repartition",
      ]);
      expect(changelog?.topic?.config).toMatchObject({
        "cleanup.policy": "compact",
        "message.timestamp.type": "CreateTime",
      });
      expect(repartition?.topic?.config["cleanup.policy"]).toBe("delete");
      // Streams purged the repartition records it had consumed and committed (DeleteRecords).
      const starts = await Promise.all(
        [0, 1, 2].map((partition) =>
          admin.listOffset({ topic: "app-crash-by-word-repartition", partition }, "earliest"),
        ),
      );
      expect(starts.reduce((a, b) => a + b, 0n)).toBeGreaterThan(0n);
    });

    it("SIGKILLs of its transaction coordinator, then of a broker leading an input and a changelog partition, change no count", async () => {
      const n = 600;
      await prepare("faults", n);
      const app = startCounter("faults", n, 10);
      await until("the first committed outputs", 60_000, () =>
        outputsOf(app) >= 60 ? true : undefined,
      );
      // The stream thread's transactional id is app-faults-<process id>-<thread>.
      const coordinator = await until(
        "the coordinator of the app's transactional id",
        30_000,
        async () => {
          const { transactions } = await admin.listTransactions();
          const txn = transactions.find((t) => t.transactionalId.startsWith("app-faults-"));
          if (txn === undefined) return undefined;
          const m = await admin.metadataView();
          const leader = m.topics
            .find((t) => t.name === TRANSACTION_STATE_TOPIC)
            ?.partitions.find((p) => p.partition === txn.partition)?.leader;
          return leader !== undefined && leader >= 0 ? leader : undefined;
        },
      );
      expect(cluster.kill("coordinator", coordinator)).toBe(true);
      expect(await cluster.waitForExit("coordinator", coordinator, 10_000)).toBe(true);
      const atCoordinatorKill = outputsOf(app);
      await until("outputs committed after the coordinator's SIGKILL", 60_000, () =>
        outputsOf(app) >= atCoordinatorKill + 60 ? true : undefined,
      );
      // A broker that leads an input partition and a changelog partition (3 partitions over 3
      // brokers: each leads one of each), the group's coordinator if it is one, else the
      // leader of changelog partition 0.
      const [input, changelog] = await admin.describeTopics([
        "faults-in",
        "app-faults-counts-changelog",
      ]);
      const inputLeaders = input!.topic!.partitions.map((p) => p.leader);
      const changelogLeaders = changelog!.topic!.partitions.map((p) => p.leader);
      const both = changelogLeaders.filter((b) => b >= 0 && inputLeaders.includes(b));
      const { coordinator: groupCoordinator } = await admin.describeGroup("app-faults");
      const broker = both.includes(groupCoordinator)
        ? groupCoordinator
        : (both[0] ?? changelogLeaders[0]!);
      expect(broker).toBeGreaterThanOrEqual(0);
      expect(cluster.kill("broker", broker)).toBe(true);
      expect(await cluster.waitForExit("broker", broker, 10_000)).toBe(true);
      expect(outputsOf(app)).toBeLessThan(n); // both faults hit a running application
      const done = await finished(app);
      expectExactlyOnce(done.values as string[], n);
    });
  },
);

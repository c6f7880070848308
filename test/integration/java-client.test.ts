// Kafka's Java client (kafka-clients 4.4.0 from Maven Central, test/java) against tern's Kafka
// listeners on a real local cluster: an idempotent producer, then a read_committed consumer in a
// classic group; a transactional producer committing, aborting and committing (read_committed
// sees only the committed records); and the consume-transform-produce copier with
// sendOffsetsToTransaction(offsets, consumer.groupMetadata()) (TxnOffsetCommit v3, KIP-447),
// halted mid-transaction after a few commits and restarted under the same transactional id and
// group: every input record is copied once, none twice, and the group's committed offsets
// are the input's end. With group.protocol=consumer (KIP-848: ConsumerGroupHeartbeat, topics
// by id) a read_committed consumer reads every committed record once, and two members split a
// topic's partitions. The versions the client sends are read from its own log: Produce v12,
// Fetch v12 (the newest without topic ids), ListOffsets v9 and OffsetCommit v9, all flexible;
// the consumer fetches incrementally in a fetch session (KIP-227); the Admin client's
// listOffsets by max timestamp (v7), earliest local (v8) and latest tiered
// (v9) answer as Kafka does for a log that is all local. Transactions V2 (KIP-890 part 2, the
// listeners finalize transaction.version 2): the transactional producer and the copier end
// with EndTxn v5, each end bumping the epoch, and never send AddPartitionsToTxn or
// AddOffsetsToTxn (Produce v12 and TxnOffsetCommit v5 add implicitly). The programs are built by
// scripts/setup/java-clients.sh (a no-op once built). Needs java and mvn (.ci/run installs
// them); skipped without java.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Admin } from "../../libs/client/index.js";
import type { ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import {
  hasJava,
  javaClasspath,
  runJava,
  type JavaRun,
  type JavaRunOptions,
} from "./helpers/java-client.js";
import { sharedCluster, stopSharedCluster } from "./helpers/shared-cluster.js";

const JAVA = hasJava();
if (!JAVA)
  process.stderr.write(
    "java-client.test.ts SKIPPED: needs java and mvn; install with: apt-get install -y openjdk-17-jdk-headless maven\n",
  );

let cluster: ProcessCluster;
let admin: Admin;
let classpath: string;
/** The brokers' Kafka listeners. */
let bootstrap: string;

const TOPICS = [
  "java-idem",
  "java-txn",
  "java-in",
  "java-out",
  "java-versions",
  "java-specs",
  "java-v2-txn",
  "java-v2-in",
  "java-v2-out",
  "java-848",
];

/** NetworkClient logs every request's header at DEBUG; TransactionManager each new producer id and epoch at INFO. */
const VERSIONS_LOGGED: JavaRunOptions = {
  debugLoggers: [
    "org.apache.kafka.clients.NetworkClient",
    "org.apache.kafka.clients.producer.internals.TransactionManager",
  ],
  logLinesWith: ["Sending ", "ProducerId set to"],
};

/** The highest version of each API a run sent ("Sending FETCH request with header RequestHeader(apiKey=FETCH, apiVersion=12, ..."). */
function sentVersions(r: JavaRun): Map<string, number> {
  const versions = new Map<string, number>();
  for (const line of r.logLines) {
    const m = /apiKey=(\w+), apiVersion=(\d+)/.exec(line);
    if (m) versions.set(m[1]!, Math.max(versions.get(m[1]!) ?? -1, Number(m[2])));
  }
  return versions;
}

/** Each "ProducerId set to P with epoch E" of a run's transactional producer, in order. */
function producerIdentities(r: JavaRun): Array<{ producerId: number; epoch: number }> {
  return r.logLines.flatMap((line) => {
    const m = /ProducerId set to (\d+) with epoch (\d+)/.exec(line);
    return m ? [{ producerId: Number(m[1]), epoch: Number(m[2]) }] : [];
  });
}

/** The events of one program run; fails with its output unless it exited with `code`. */
async function run(
  main: string,
  args: readonly string[],
  code = 0,
  options: JavaRunOptions = {},
): Promise<JavaRun> {
  const r = await runJava(classpath, main, args, undefined, options);
  expect(r.code, `${main}: ${JSON.stringify(r.events)} ${r.stderr}`).toBe(code);
  return r;
}

function lastEvent(r: JavaRun, event: string): Record<string, any> {
  const e = r.events.filter((x) => x.event === event).at(-1);
  expect(e, `no ${event} event in ${JSON.stringify(r.events)} ${r.stderr}`).toBeDefined();
  return e!;
}

/** Every committed value of a topic, read by the Java client under read_committed. */
async function readCommitted(
  topic: string,
  expected: number,
  group = "-",
  protocol: "classic" | "consumer" = "classic",
): Promise<string[]> {
  const read = lastEvent(
    await run("ReadCommitted", [bootstrap, topic, String(expected), "60000", group, protocol]),
    "read",
  );
  expect(read.timedOut).toBe(false);
  return read.values as string[];
}

const range = (prefix: string, n: number): string[] =>
  Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

describe.skipIf(!JAVA)(
  "the Kafka Java client (kafka-clients 4.4) through tern's Kafka listener",
  () => {
    beforeAll(async () => {
      classpath = javaClasspath();
      cluster = await sharedCluster();
      bootstrap = [0, 1, 2]
        .map((i) => `127.0.0.1:${cluster.spec("broker", i).kafkaPort}`)
        .join(",");
      admin = new Admin({ bootstrap: cluster.addresses("controller").join(",") });
      const created = await admin.createTopics(
        TOPICS.map((name) => ({
          name,
          partitions: name === "java-specs" ? 1 : 3,
          replicationFactor: 3,
        })),
      );
      for (const c of created) expect(c.error ?? null).toBeNull();
      await admin.waitForLeaders(TOPICS);
    }, 300_000);

    afterAll(async () => {
      await admin?.close();
      await stopSharedCluster();
    }, 60_000);

    it("an idempotent producer's records reach a read_committed consumer in a classic group", async () => {
      const produced = lastEvent(
        await run("IdempotentProducer", [bootstrap, "java-idem", "500", "v"]),
        "produced",
      );
      expect(produced.count).toBe(500);
      expect(Object.keys(produced.partitions)).toHaveLength(3);
      const values = await readCommitted("java-idem", 500, "java-idem-readers");
      expect(values.length).toBe(500);
      expect([...values].sort()).toEqual(range("v", 500).sort());
    });

    it("the client sends the newest versions tern serves: Produce v12, Fetch v12, ListOffsets v9, OffsetCommit v9", async () => {
      // NetworkClient logs every request's header at DEBUG: "Sending FETCH request with header
      // RequestHeader(apiKey=FETCH, apiVersion=12, ...".
      const logged: JavaRunOptions = {
        debugLoggers: ["org.apache.kafka.clients.NetworkClient"],
        logLinesWith: ["Sending "],
      };
      const sent = (r: JavaRun): Map<string, number> => {
        const versions = new Map<string, number>();
        for (const line of r.logLines) {
          const m = /apiKey=(\w+), apiVersion=(\d+)/.exec(line);
          if (m) versions.set(m[1]!, Math.max(versions.get(m[1]!) ?? -1, Number(m[2])));
        }
        return versions;
      };
      const produced = await run(
        "IdempotentProducer",
        [bootstrap, "java-versions", "30", "v"],
        0,
        logged,
      );
      expect(lastEvent(produced, "produced").count).toBe(30);
      expect(sent(produced).get("PRODUCE")).toBe(12);
      const read = await run(
        "ReadCommitted",
        [bootstrap, "java-versions", "30", "60000", "java-versions-readers"],
        0,
        logged,
      );
      expect(lastEvent(read, "read").count).toBe(30);
      const versions = sent(read);
      expect(versions.get("FETCH")).toBe(12);
      // Fetch sessions (KIP-227): after the first full fetch the consumer fetches incrementally.
      const fetches = read.logLines.filter((l) => l.includes("apiKey=FETCH"));
      expect(fetches.some((l) => /sessionEpoch=[1-9]/.test(l))).toBe(true);
      expect(versions.get("LIST_OFFSETS")).toBe(9);
      expect(versions.get("OFFSET_COMMIT")).toBe(9);
      const group = await admin.describeGroup("java-versions-readers");
      const committed = group.partitions.filter((p) => p.topic === "java-versions");
      expect(committed.reduce((n, p) => n + Number(p.committed ?? -1n), 0)).toBe(30);
    });

    it("the Admin client lists offsets by max timestamp, earliest local and latest tiered (ListOffsets v7-v9)", async () => {
      const base = Date.now() - 60_000;
      const r = await run("ListOffsetSpecs", [
        bootstrap,
        "java-specs",
        String(base),
        String(base + 5_000),
        String(base + 1_000),
      ]);
      const bySpec = new Map(
        r.events
          .filter((e) => e.event === "offset")
          .map((e) => [e.spec as string, [e.offset, e.timestamp]]),
      );
      expect(Object.fromEntries(bySpec)).toEqual({
        earliest: [0, -1],
        latest: [3, -1],
        maxTimestamp: [1, base + 5_000],
        earliestLocal: [0, -1],
        latestTiered: [-1, -1],
      });
    });

    it("a transactional producer commits, aborts and commits: read_committed sees the committed records only", async () => {
      const r = await run("TransactionalProducer", [bootstrap, "java-txn", "java-txn-1", "100"]);
      expect(r.events.map((e) => e.event)).toEqual(["committed", "aborted", "committed", "done"]);
      const values = await readCommitted("java-txn", 200);
      expect([...values].sort()).toEqual([...range("c1", 100), ...range("c2", 100)].sort());
    });

    it("transactions V2: EndTxn v5 bumps the epoch at every end, Produce v12 adds partitions without AddPartitionsToTxn", async () => {
      const r = await run(
        "TransactionalProducer",
        [bootstrap, "java-v2-txn", "java-v2-txn-1", "50"],
        0,
        VERSIONS_LOGGED,
      );
      expect(r.events.map((e) => e.event)).toEqual(["committed", "aborted", "committed", "done"]);
      const versions = sentVersions(r);
      expect(versions.get("END_TXN")).toBe(5);
      expect(versions.get("PRODUCE")).toBe(12);
      expect(versions.has("ADD_PARTITIONS_TO_TXN")).toBe(false);
      // InitProducerId, then one bump per end (commit, abort, commit), under one producer id.
      const ids = producerIdentities(r);
      expect(ids).toHaveLength(4);
      expect(new Set(ids.map((x) => x.producerId)).size).toBe(1);
      expect(ids.map((x) => x.epoch - ids[0]!.epoch)).toEqual([0, 1, 2, 3]);
      const values = await readCommitted("java-v2-txn", 100);
      expect([...values].sort()).toEqual([...range("c1", 50), ...range("c2", 50)].sort());
    });

    it("transactions V2: the copier commits offsets with TxnOffsetCommit v5 and no AddOffsetsToTxn, exactly once", async () => {
      const total = 120;
      await run("IdempotentProducer", [bootstrap, "java-v2-in", String(total), "in"]);
      const r = await run(
        "TxnCopier",
        [
          bootstrap,
          "java-v2-in",
          "java-v2-out",
          "java-v2-copiers",
          "java-v2-copier-1",
          String(total),
          "60000",
        ],
        0,
        VERSIONS_LOGGED,
      );
      expect(lastEvent(r, "copied").count).toBe(total);
      const versions = sentVersions(r);
      expect(versions.get("TXN_OFFSET_COMMIT")).toBe(5);
      expect(versions.get("END_TXN")).toBe(5);
      expect(versions.has("ADD_OFFSETS_TO_TXN")).toBe(false);
      expect(versions.has("ADD_PARTITIONS_TO_TXN")).toBe(false);
      const commits = r.events.filter((e) => e.event === "committed").length;
      expect(producerIdentities(r)).toHaveLength(1 + commits);
      const out = await readCommitted("java-v2-out", total);
      expect([...out].sort()).toEqual(range("in", total).sort());
      const group = await admin.describeGroup("java-v2-copiers");
      const offsets = group.partitions.filter((p) => p.topic === "java-v2-in");
      expect(offsets.reduce((n, p) => n + Number(p.committed ?? -1n), 0)).toBe(total);
    });

    it("a read_committed consumer in a KIP-848 group (group.protocol=consumer) reads every committed record once", async () => {
      // java-txn holds the committed and aborted transactions of the test above.
      const values = await readCommitted("java-txn", 200, "java-txn-848", "consumer");
      expect([...values].sort()).toEqual([...range("c1", 100), ...range("c2", 100)].sort());
    });

    it("two members of a KIP-848 group split the partitions between them and read every record", async () => {
      const produced = lastEvent(
        await run("IdempotentProducer", [bootstrap, "java-848", "300", "g"]),
        "produced",
      );
      expect(produced.count).toBe(300);
      const member = () =>
        run("GroupMember", [bootstrap, "java-848", "java-848-members", "consumer", "20000"]);
      const [a, b] = (await Promise.all([member(), member()])).map((r) => lastEvent(r, "member"));
      const assigned = [a!.assigned as number[], b!.assigned as number[]];
      for (const partitions of assigned) expect(partitions.length).toBeGreaterThan(0);
      expect([...assigned[0]!, ...assigned[1]!].sort()).toEqual([0, 1, 2]);
      const values = new Set([...(a!.values as string[]), ...(b!.values as string[])]);
      expect([...values].sort()).toEqual(range("g", 300).sort());
    });

    it("the consume-transform-produce copier (sendOffsetsToTransaction with group metadata) copies every record exactly once across a crash", async () => {
      const total = 600;
      const produced = lastEvent(
        await run("IdempotentProducer", [bootstrap, "java-in", String(total), "in"]),
        "produced",
      );
      expect(produced.count).toBe(total);
      const copier = (expected: number, haltAfter?: number): string[] => [
        bootstrap,
        "java-in",
        "java-out",
        "java-copiers",
        "java-copier-1",
        String(expected),
        "60000",
        ...(haltAfter === undefined ? [] : [String(haltAfter)]),
      ];
      // The first instance commits 3 transactions, then halts (exit 3) with the 4th's records and
      // offsets sent: no abort, no LeaveGroup, as a crash.
      const first = await run("TxnCopier", copier(total, 3), 3);
      const committed = first.events.filter((e) => e.event === "committed");
      expect(committed).toHaveLength(3);
      expect(lastEvent(first, "halting").records).toBeGreaterThan(0);
      const copiedFirst = committed.reduce((n, e) => n + (e.records as number), 0);
      // The second fences the first's producer (its open transaction aborts), joins the group in
      // a newer generation and copies the rest from the offsets committed with the transactions.
      const second = await run("TxnCopier", copier(total - copiedFirst));
      const done = lastEvent(second, "copied");
      expect(done.count).toBe(total - copiedFirst);
      expect(
        Math.max(...second.events.filter((e) => e.event === "committed").map((e) => e.generation)),
      ).toBeGreaterThan(Math.max(...committed.map((e) => e.generation)));
      const out = await readCommitted("java-out", total);
      expect(out.length).toBe(total); // none twice
      expect([...out].sort()).toEqual(range("in", total).sort()); // every one once
      const group = await admin.describeGroup("java-copiers");
      const offsets = group.partitions.filter((p) => p.topic === "java-in");
      expect(offsets).toHaveLength(3);
      expect(offsets.reduce((n, p) => n + Number(p.committed ?? -1n), 0)).toBe(total);
    });
  },
);

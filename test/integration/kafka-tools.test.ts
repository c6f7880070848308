// Kafka's own command-line tools (kafka-tools 4.4.0 and its server jars from Maven Central,
// fetched by scripts/setup/kafka-tools.sh) run unchanged with `java -cp` against tern's Kafka
// listeners on a real local cluster, their printed output parsed and checked: kafka-topics
// (create with a config, list, describe, alter partitions, delete), the console producer and
// consumer (keys, --from-beginning, --max-messages, read_committed), kafka-consumer-groups
// (members and state, lag, reset offsets to earliest as a dry run and executed),
// kafka-transactions (list, describe, describe-producers, find-hanging and abort of a
// transaction left open by a kafkajs producer), kafka-get-offsets and kafka-producer-perf-test
// (plain and transactional). What tern refuses is listed in docs/kafka-protocol.md ("Kafka's
// command-line tools"). Needs java and mvn (.ci/run installs them); skipped without java.
import kafkajs from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../../libs/common/poll.js";
import type { ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { hasJava } from "./helpers/java-client.js";
import {
  kafkaToolsClasspath,
  parseTable,
  runTool,
  TOOL,
  type ToolRun,
} from "./helpers/kafka-tools.js";
import { sharedCluster, stopSharedCluster } from "./helpers/shared-cluster.js";

const { Kafka, logLevel } = kafkajs;

const JAVA = hasJava();
if (!JAVA)
  process.stderr.write(
    "kafka-tools.test.ts SKIPPED: needs java and mvn; install with: apt-get install -y openjdk-17-jdk-headless maven\n",
  );

let cluster: ProcessCluster;
let classpath: string;
/** The brokers' Kafka listeners. */
let bootstrap: string;

/** Runs a tool; fails with its output unless it exited with `code`. */
async function tool(
  main: string,
  args: readonly string[],
  options: { stdin?: string; code?: number } = {},
): Promise<ToolRun> {
  const r = await runTool(classpath, main, args, { stdin: options.stdin });
  expect(r.code, `${main} ${args.join(" ")}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`).toBe(
    options.code ?? 0,
  );
  return r;
}

const topics = (...args: string[]): Promise<ToolRun> =>
  tool(TOOL.topics, ["--bootstrap-server", bootstrap, ...args]);
const groups = (...args: string[]): Promise<ToolRun> =>
  tool(TOOL.consumerGroups, ["--bootstrap-server", bootstrap, ...args]);
const transactions = (...args: string[]): Promise<ToolRun> =>
  tool(TOOL.transactions, ["--bootstrap-server", bootstrap, ...args]);

/** kafka-console-producer with keys ("key<TAB>value" lines) and acks=all. */
async function produceKeyed(topic: string, records: ReadonlyArray<[string, string]>) {
  await tool(
    TOOL.consoleProducer,
    [
      "--bootstrap-server",
      bootstrap,
      "--topic",
      topic,
      "--reader-property",
      "parse.key=true",
      "--reader-property",
      "key.separator=\t",
      "--command-property",
      "acks=all",
    ],
    { stdin: records.map(([k, v]) => `${k}\t${v}\n`).join("") },
  );
}

/** kafka-get-offsets: partition -> offset at this --time (-1 latest, -2 earliest). */
async function offsets(topic: string, time = "-1"): Promise<Map<number, number>> {
  const r = await tool(TOOL.getOffsets, [
    "--bootstrap-server",
    bootstrap,
    "--topic",
    topic,
    "--time",
    time,
  ]);
  const out = new Map<number, number>();
  for (const line of r.stdout.trim().split("\n")) {
    const m = /^(.+):(\d+):(\d*)$/.exec(line.trim());
    expect(m, `get-offsets line "${line}"`).not.toBeNull();
    expect(m![1]).toBe(topic);
    out.set(Number(m![2]), Number(m![3]));
  }
  return out;
}

const sum = (m: ReadonlyMap<number, number>): number => [...m.values()].reduce((a, b) => a + b, 0);

/** kafka-consumer-groups --describe: one row per partition the group has an offset for. */
async function describeGroup(group: string): Promise<Array<Record<string, string>>> {
  const r = await groups("--describe", "--group", group);
  return parseTable(r.stdout, "GROUP").sort((a, b) => Number(a.PARTITION) - Number(b.PARTITION));
}

describe.skipIf(!JAVA)("Kafka's command-line tools (kafka-tools 4.4) against tern", () => {
  beforeAll(async () => {
    classpath = kafkaToolsClasspath();
    cluster = await sharedCluster();
    bootstrap = [0, 1, 2].map((i) => `127.0.0.1:${cluster.spec("broker", i).kafkaPort}`).join(",");
  }, 300_000);

  afterAll(async () => {
    await stopSharedCluster();
  }, 60_000);

  it("kafka-topics creates, lists, describes, alters and deletes a topic", async () => {
    const created = await topics(
      "--create",
      "--topic",
      "tools-topics",
      "--partitions",
      "3",
      "--replication-factor",
      "3",
      "--config",
      "retention.ms=3600000",
    );
    expect(created.stdout).toContain("Created topic tools-topics.");
    expect((await topics("--list")).stdout.split("\n")).toContain("tools-topics");

    const describe = async (): Promise<{ header: string; partitions: string[][] }> => {
      const lines = (await topics("--describe", "--topic", "tools-topics")).stdout
        .split("\n")
        .filter((l) => l.trim() !== "");
      return {
        header: lines[0]!,
        partitions: lines.slice(1).map((l) => l.trim().split("\t")),
      };
    };
    const before = await describe();
    // The topic's id (KIP-516) as Kafka prints it: 22 characters of URL-safe base64, never the
    // zero id (AAAAAAAAAAAAAAAAAAAAAA) now that the controller gives every topic one.
    expect(before.header).toMatch(
      /^Topic: tools-topics\tTopicId: [A-Za-z0-9_-]{22}\tPartitionCount: 3\tReplicationFactor: 3\t/,
    );
    expect(before.header).not.toContain("TopicId: AAAAAAAAAAAAAAAAAAAAAA");
    expect(before.header).toContain("Configs: retention.ms=3600000");
    expect(before.partitions).toHaveLength(3);
    for (const [i, cells] of before.partitions.entries()) {
      const field = (name: string) =>
        cells.find((c) => c.startsWith(`${name}: `))!.slice(name.length + 2);
      expect(field("Partition")).toBe(String(i));
      const replicas = field("Replicas").split(",").map(Number).sort();
      expect(replicas).toEqual([0, 1, 2]);
      expect(replicas).toContain(Number(field("Leader")));
      expect(field("Isr").split(",").map(Number).sort()).toEqual([0, 1, 2]);
    }

    await topics("--alter", "--topic", "tools-topics", "--partitions", "5");
    const after = await describe();
    expect(after.header).toContain("PartitionCount: 5");
    expect(after.partitions).toHaveLength(5);
    // Fewer partitions is refused (Kafka's InvalidPartitionsException).
    const fewer = await tool(
      TOOL.topics,
      ["--bootstrap-server", bootstrap, "--alter", "--topic", "tools-topics", "--partitions", "2"],
      { code: 1 },
    );
    expect(fewer.stdout + fewer.stderr).toMatch(
      /InvalidPartitionsException|partitions cannot be removed/,
    );
    await topics("--delete", "--topic", "tools-topics");
    await until("kafka-topics --list no longer names the deleted topic", 30_000, async () =>
      (await topics("--list")).stdout.split("\n").includes("tools-topics") ? undefined : true,
    );
  });

  it("the console producer's keyed records reach the console consumer (read_committed, --from-beginning, --max-messages)", async () => {
    await topics(
      "--create",
      "--topic",
      "tools-console",
      "--partitions",
      "3",
      "--replication-factor",
      "3",
    );
    const records = Array.from({ length: 30 }, (_, i): [string, string] => [`k${i % 7}`, `v${i}`]);
    await produceKeyed("tools-console", records);
    const consumed = await tool(TOOL.consoleConsumer, [
      "--bootstrap-server",
      bootstrap,
      "--topic",
      "tools-console",
      "--from-beginning",
      "--max-messages",
      "30",
      "--isolation-level",
      "read_committed",
      "--group",
      "tools-console-readers",
      "--formatter-property",
      "print.key=true",
      "--timeout-ms",
      "30000",
    ]);
    const lines = consumed.stdout
      .trim()
      .split("\n")
      .map((l) => l.split("\t"));
    expect(lines.map(([k, v]) => `${k}=${v}`).sort()).toEqual(
      records.map(([k, v]) => `${k}=${v}`).sort(),
    );
    expect(consumed.stderr).toContain("Processed a total of 30 messages");
    // One key, one partition: each key's values arrive in the order produced.
    for (const key of new Set(records.map(([k]) => k)))
      expect(lines.filter(([k]) => k === key).map(([, v]) => v)).toEqual(
        records.filter(([k]) => k === key).map(([, v]) => v),
      );
  });

  it("kafka-consumer-groups describes a group's members, state and lag, and resets its offsets to the earliest (dry run, then executed)", async () => {
    // The group committed every record of the previous case; five more make a lag of five.
    const group = "tools-console-readers";
    const caughtUp = await describeGroup(group);
    expect(caughtUp).toHaveLength(3);
    for (const row of caughtUp) {
      expect(row.TOPIC).toBe("tools-console");
      expect(row["CURRENT-OFFSET"]).toBe(row["LOG-END-OFFSET"]);
      expect(row.LAG).toBe("0");
    }
    // While a console consumer is in the group: its member, assignment and the group's state.
    const member = runTool(classpath, TOOL.consoleConsumer, [
      "--bootstrap-server",
      bootstrap,
      "--topic",
      "tools-console",
      "--group",
      group,
      "--timeout-ms",
      "12000",
      "--command-property",
      "client.id=tools-member",
    ]);
    const members = await until(
      "the console consumer is the group's member with its assignment",
      40_000,
      async () => {
        const rows = parseTable(
          (await groups("--describe", "--group", group, "--members")).stdout,
          "GROUP",
        );
        // Listed from its JoinGroup on; assigned once the group is Stable.
        return rows.length > 0 && rows.every((r) => r["#PARTITIONS"] !== "0") ? rows : undefined;
      },
    );
    expect(members).toHaveLength(1);
    expect(members[0]).toMatchObject({
      "CLIENT-ID": "tools-member",
      HOST: "/127.0.0.1",
      "#PARTITIONS": "3",
    });
    const [state] = parseTable(
      (await groups("--describe", "--group", group, "--state")).stdout,
      "GROUP",
    );
    expect(state).toMatchObject({
      GROUP: group,
      "ASSIGNMENT-STRATEGY": "range",
      STATE: "Stable",
      "#MEMBERS": "1",
    });
    await member; // it leaves after 12 s without records
    await produceKeyed(
      "tools-console",
      Array.from({ length: 5 }, (_, i): [string, string] => [`late${i}`, `w${i}`]),
    );
    const lagging = await describeGroup(group);
    expect(lagging.reduce((n, row) => n + Number(row.LAG), 0)).toBe(5);
    const end = await offsets("tools-console");
    expect(sum(end)).toBe(35);
    for (const row of lagging)
      expect(Number(row["LOG-END-OFFSET"])).toBe(end.get(Number(row.PARTITION)));
    expect((await groups("--list")).stdout.split("\n")).toContain(group);

    const reset = (mode: string) =>
      groups(
        "--reset-offsets",
        "--group",
        group,
        "--topic",
        "tools-console",
        "--to-earliest",
        mode,
      );
    const planned = parseTable((await reset("--dry-run")).stdout, "GROUP");
    expect(planned.map((r) => [r.PARTITION, r["NEW-OFFSET"]]).sort()).toEqual([
      ["0", "0"],
      ["1", "0"],
      ["2", "0"],
    ]);
    // A dry run changes nothing.
    expect((await describeGroup(group)).map((r) => r["CURRENT-OFFSET"])).toEqual(
      lagging.map((r) => r["CURRENT-OFFSET"]),
    );
    const executed = parseTable((await reset("--execute")).stdout, "GROUP");
    expect(executed.every((r) => r["NEW-OFFSET"] === "0")).toBe(true);
    const rewound = await describeGroup(group);
    for (const row of rewound) {
      expect(row["CURRENT-OFFSET"]).toBe("0");
      expect(row.LAG).toBe(row["LOG-END-OFFSET"]);
    }
    expect(rewound.reduce((n, row) => n + Number(row.LAG), 0)).toBe(35);
  });

  it("kafka-transactions lists, describes, finds and aborts a transaction its producer never ends", async () => {
    await topics(
      "--create",
      "--topic",
      "tools-txn",
      "--partitions",
      "1",
      "--replication-factor",
      "3",
    );
    await produceKeyed("tools-txn", [["before", "committed"]]);
    const kafka = new Kafka({ brokers: bootstrap.split(","), logLevel: logLevel.NOTHING });
    const producer = kafka.producer({
      transactionalId: "tools-hanging",
      idempotent: true,
      maxInFlightRequests: 1,
      transactionTimeout: 120_000,
    });
    await producer.connect();
    try {
      const txn = await producer.transaction();
      await txn.send({
        topic: "tools-txn",
        messages: [
          { key: "open", value: "never-ended" },
          { key: "open", value: "never-ended-2" },
        ],
      });

      const listed = parseTable((await transactions("list")).stdout, "TransactionalId");
      const mine = listed.find((r) => r.TransactionalId === "tools-hanging");
      expect(mine, JSON.stringify(listed)).toMatchObject({ TransactionState: "Ongoing" });
      expect(Number(mine!.Coordinator)).toBeGreaterThanOrEqual(1_000_000_000); // a coordinator's Kafka node id

      const described = parseTable(
        (await transactions("describe", "--transactional-id", "tools-hanging")).stdout,
        "CoordinatorId",
      );
      expect(described).toHaveLength(1);
      expect(described[0]).toMatchObject({
        TransactionalId: "tools-hanging",
        ProducerId: mine!.ProducerId,
        TransactionState: "Ongoing",
        TransactionTimeoutMs: "120000",
      });

      const producers = parseTable(
        (await transactions("describe-producers", "--topic", "tools-txn", "--partition", "0"))
          .stdout,
        "ProducerId",
      );
      const open = producers.find((r) => r.ProducerId === mine!.ProducerId);
      expect(open, JSON.stringify(producers)).toMatchObject({
        CurrentTransactionStartOffset: "1",
        LastSequence: "1",
      });

      // Open for less than the bound, and its coordinator still has it: not hanging.
      const hanging = await transactions(
        "find-hanging",
        "--topic",
        "tools-txn",
        "--max-transaction-timeout",
        "0",
      );
      expect(parseTable(hanging.stdout, "Topic")).toEqual([]);

      const aborted = await transactions(
        "abort",
        "--topic",
        "tools-txn",
        "--partition",
        "0",
        "--start-offset",
        "1",
      );
      expect(aborted.stderr).not.toMatch(/Failed/);
      const after = parseTable(
        (await transactions("describe-producers", "--topic", "tools-txn", "--partition", "0"))
          .stdout,
        "ProducerId",
      );
      expect(after.find((r) => r.ProducerId === mine!.ProducerId)).toMatchObject({
        CurrentTransactionStartOffset: "None",
      });
      // The partition's last stable offset moved past the abort marker: read_committed reads on.
      const read = await tool(
        TOOL.consoleConsumer,
        [
          "--bootstrap-server",
          bootstrap,
          "--topic",
          "tools-txn",
          "--from-beginning",
          "--isolation-level",
          "read_committed",
          "--formatter-property",
          "print.key=true",
          "--timeout-ms",
          "5000",
        ],
        { code: 0 },
      );
      expect(read.stdout.trim().split("\n")).toEqual(["before\tcommitted"]);
    } finally {
      await producer.disconnect();
    }
  });

  it("kafka-get-offsets answers each partition's latest and earliest offset", async () => {
    await topics(
      "--create",
      "--topic",
      "tools-offsets",
      "--partitions",
      "3",
      "--replication-factor",
      "3",
    );
    await produceKeyed(
      "tools-offsets",
      Array.from({ length: 12 }, (_, i): [string, string] => [`o${i}`, `x${i}`]),
    );
    const latest = await offsets("tools-offsets");
    expect([...latest.keys()].sort()).toEqual([0, 1, 2]);
    expect(sum(latest)).toBe(12);
    expect([...(await offsets("tools-offsets", "-2")).values()]).toEqual([0, 0, 0]);
  });

  it("kafka-producer-perf-test sends its records with acks=all, plainly and in transactions, and reports its throughput", async () => {
    await topics(
      "--create",
      "--topic",
      "tools-perf",
      "--partitions",
      "3",
      "--replication-factor",
      "3",
    );
    const perf = async (...extra: string[]): Promise<number> => {
      const r = await tool(TOOL.producerPerfTest, [
        "--bootstrap-server",
        bootstrap,
        "--topic",
        "tools-perf",
        "--num-records",
        "3000",
        "--record-size",
        "100",
        "--throughput",
        "-1",
        "--command-property",
        "acks=all",
        ...extra,
      ]);
      const summary =
        /^(\d+) records sent, ([\d.]+) records\/sec .*, ([\d.]+) ms avg latency/m.exec(r.stdout);
      expect(summary, r.stdout).not.toBeNull();
      expect(Number(summary![2])).toBeGreaterThan(0);
      return Number(summary![1]);
    };
    expect(await perf()).toBe(3000);
    expect(sum(await offsets("tools-perf"))).toBe(3000);

    // Transactions of 200 ms each, committed by the Java producer (Produce v11, EndTxn).
    expect(
      await perf("--transactional-id", "tools-perf-txn", "--transaction-duration-ms", "200"),
    ).toBe(3000);
    const described = parseTable(
      (await transactions("describe", "--transactional-id", "tools-perf-txn")).stdout,
      "CoordinatorId",
    );
    expect(described[0]).toMatchObject({
      TransactionalId: "tools-perf-txn",
      TransactionState: "CompleteCommit",
    });
    // 3000 more records and at least one commit marker per partition written to.
    expect(sum(await offsets("tools-perf"))).toBeGreaterThan(6000);
  });
});

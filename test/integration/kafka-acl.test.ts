// ACLs on the Kafka listeners of real processes started with TLS and --security acl
// --super-users User:admin,User:tern-admin (SASL/SCRAM and ACLs on every listener; tern-admin
// is the CLI's certificate), with kafkajs and kcat (librdkafka, sasl_ssl) as
// the clients nobody here wrote: the super-user creates ACLs through Kafka's CreateAcls; a user
// with only READ on topic A cannot produce to A (nothing is written) or read B, and cannot use a
// group or transactional id it has no ACL for; deleting its READ ACL (tern acl delete) cuts its
// open consumer off within about a second. Needs kcat and python3-confluent-kafka (Debian
// packages; .ci/run installs them).
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import kafkajs from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Admin } from "../../libs/client/index.js";
import { until } from "../../libs/common/poll.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import {
  KCAT_BOUNDED,
  KCAT_REFUSED,
  runKcat,
  SASL_TEST_ENV,
  SASL_TEST_SHAPE,
  type KcatResult,
} from "./helpers/kcat.js";
import { okCli } from "./helpers/tern-cli.js";

const hasKcat = spawnSync("kcat", ["-V"], { encoding: "utf8" }).status === 0;
const hasConfluent =
  spawnSync("/usr/bin/python3", ["-c", "import confluent_kafka"], { encoding: "utf8" }).status ===
  0;
if (!hasKcat || !hasConfluent)
  process.stderr.write(
    "kafka-acl.test.ts SKIPPED: needs kcat and python3-confluent-kafka: apt-get install -y kcat python3-confluent-kafka\n",
  );

/** A confluent-kafka consumer as alice in group acl-other: prints the first consumer error's name (bounded: 40 polls). */
const GROUP_REFUSED_SCRIPT = [
  "import sys",
  "from confluent_kafka import Consumer",
  "c = Consumer({'bootstrap.servers': sys.argv[1], 'group.id': 'acl-other', 'security.protocol': 'sasl_ssl', 'ssl.ca.location': sys.argv[2], 'sasl.mechanisms': 'SCRAM-SHA-512',",
  "              'sasl.username': 'alice', 'sasl.password': 'alice-secret', 'auto.offset.reset': 'earliest'})",
  "c.subscribe(['acl-a'])",
  "for _ in range(40):",
  "    m = c.poll(0.5)",
  "    if m is not None and m.error():",
  "        print(m.error().name())",
  "        break",
  "    if m is not None:",
  "        print('MESSAGE ' + m.value().decode())",
  "        break",
  "c.close()",
].join("\n");

/** A confluent-kafka transactional producer as alice with id acl-t1: prints the init error's name. */
const TXN_REFUSED_SCRIPT = [
  "import sys",
  "from confluent_kafka import Producer, KafkaException",
  "p = Producer({'bootstrap.servers': sys.argv[1], 'transactional.id': 'acl-t1', 'security.protocol': 'sasl_ssl', 'ssl.ca.location': sys.argv[2], 'sasl.mechanisms': 'SCRAM-SHA-512',",
  "              'sasl.username': 'alice', 'sasl.password': 'alice-secret'})",
  "try:",
  "    p.init_transactions(20)",
  "    print('INITIALIZED')",
  "except KafkaException as e:",
  "    print(e.args[0].name())",
].join("\n");

const { Kafka, logLevel } = kafkajs;
const SHAPE = SASL_TEST_SHAPE;
const ENV = SASL_TEST_ENV;
const BOUNDED = KCAT_BOUNDED;
const REFUSED = KCAT_REFUSED;
const PROPAGATION_TIMEOUT_MS = 20_000;
// Kafka's codes (kafkajs' Acl* enums).
const TOPIC = 2,
  LITERAL = 3,
  READ = 3,
  ALLOW = 3;

let cluster: ProcessCluster;
let dataDir: string;
let bootstrap: string;
let kafkaAddresses: string[];
/** The cluster CA (TLS on every listener) and the CLI's TLS flags (its certificate is a super-user). */
let caFile: string;
let cliTls: string[];

const security = (user: string): string[] => [
  "-X",
  `ssl.ca.location=${caFile}`,
  "-X",
  "security.protocol=sasl_ssl",
  "-X",
  "sasl.mechanisms=SCRAM-SHA-512",
  "-X",
  `sasl.username=${user}`,
  "-X",
  `sasl.password=${user}-secret`,
];
const kcat = (
  user: string,
  args: string[],
  input?: string,
  bounds = BOUNDED,
): Promise<KcatResult> =>
  runKcat(kafkaAddresses.join(","), [...security(user), ...bounds, ...args], {
    ...(input === undefined ? {} : { input }),
    timeoutMs: 60_000,
  });
const client = (user: string): InstanceType<typeof Kafka> =>
  new Kafka({
    clientId: `acl-${user}`,
    brokers: kafkaAddresses,
    logLevel: logLevel.NOTHING,
    retry: { retries: 2, initialRetryTime: 100 },
    ssl: { ca: [readFileSync(caFile)] },
    sasl: { mechanism: "scram-sha-512", username: user, password: `${user}-secret` },
  });

async function consumed(user: string, topic: string): Promise<string[]> {
  const r = await kcat(user, ["-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-q"]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout.split("\n").filter((l) => l.length > 0);
}

/** Topics kcat -L -J lists for the user (Metadata filters them by DESCRIBE). */
async function listedTopics(user: string): Promise<string[]> {
  const r = await kcat(user, ["-L", "-J"]);
  if (r.code !== 0) throw new Error(r.stderr);
  return (JSON.parse(r.stdout).topics as Array<{ topic: string; error?: string }>)
    .filter((t) => !t.error)
    .map((t) => t.topic)
    .sort();
}

describe
  .skipIf(!hasKcat || !hasConfluent)
  .sequential("ACLs on the Kafka listener (--security acl)", () => {
    beforeAll(async () => {
      dataDir = mkdtempSync(join(tmpdir(), "tern-acl-"));
      cluster = await startCluster({
        dataDir,
        ...SHAPE,
        basePort: await freeBasePort(SHAPE),
        healthTimeoutMs: 150_000,
        env: ENV,
        extraArgs: ["--security", "acl", "--super-users", "User:admin,User:tern-admin"],
        tls: true,
      });
      caFile = cluster.tls!.caFile;
      cliTls = [
        "--tls-ca-file",
        caFile,
        "--tls-cert-file",
        cluster.tls!.client.certFile,
        "--tls-key-file",
        cluster.tls!.client.keyFile,
      ];
      bootstrap = cluster.addresses("controller").join(",");
      kafkaAddresses = cluster
        .processes()
        .filter((p) => p.role === "broker")
        .map((p) => `127.0.0.1:${p.kafkaPort!}`);
      for (const user of ["admin", "alice"])
        await okCli(bootstrap, [...cliTls, "user", "create", user, "--password", `${user}-secret`]);
      const admin = new Admin({ bootstrap, tls: cluster.clientTls });
      try {
        for (const name of ["acl-a", "acl-b"]) {
          const [r] = await admin.createTopics([{ name, partitions: 1, replicationFactor: 3 }]);
          if (r?.error) throw r.error;
        }
        await admin.waitForLeaders(["acl-a", "acl-b"]);
      } finally {
        await admin.close();
      }
      // Credentials reach each broker with its metadata view.
      await until(
        "admin sees both topics",
        PROPAGATION_TIMEOUT_MS,
        async () => ((await listedTopics("admin").catch(() => [])).length >= 2 ? true : undefined),
        { intervalMs: 300 },
      );
    }, 200_000);

    afterAll(async () => {
      await cluster?.stop({ termTimeoutMs: 5_000 });
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    }, 60_000);

    it("the super-user creates ACLs with kafkajs (CreateAcls) and tern acl create, and lists them with kafkajs (DescribeAcls) and tern acl list", async () => {
      const admin = client("admin").admin();
      await admin.connect();
      try {
        await admin.createAcls({
          acl: [
            {
              resourceType: TOPIC,
              resourceName: "acl-a",
              resourcePatternType: LITERAL,
              principal: "User:alice",
              host: "*",
              operation: READ,
              permissionType: ALLOW,
            },
          ] as never,
        });
        // The group's through the CLI (the controller's CreateAcls).
        await okCli(bootstrap, [
          ...cliTls,
          "acl",
          "create",
          "--allow",
          "alice",
          "--operation",
          "read",
          "--group",
          "acl-g",
        ]);
        const described = await admin.describeAcls({
          resourceType: 1,
          resourcePatternType: 1,
          operation: 1,
          permissionType: 1,
        } as never);
        const flat = described.resources
          .flatMap((r: any) =>
            r.acls.map(
              (a: any) => `${a.principal} ${a.operation} ${r.resourceType}:${r.resourceName}`,
            ),
          )
          .sort();
        expect(flat).toEqual(["User:alice 3 2:acl-a", "User:alice 3 3:acl-g"]);
      } finally {
        await admin.disconnect();
      }
      const list = JSON.parse(
        (await okCli(bootstrap, [...cliTls, "--json", "acl", "list", "--principal", "alice"]))
          .stdout,
      );
      expect(
        list
          .map((b: any) => `${b.permission} ${b.operation} ${b.resourceType} ${b.resourceName}`)
          .sort(),
      ).toEqual(["allow read group acl-g", "allow read topic acl-a"]);
      // Alice's Metadata lists only what she may describe.
      await until(
        "alice's metadata shows only acl-a",
        PROPAGATION_TIMEOUT_MS,
        async () =>
          JSON.stringify(await listedTopics("alice")) === JSON.stringify(["acl-a"])
            ? true
            : undefined,
        { intervalMs: 300 },
      );
    }, 120_000);

    it("a user with only READ on A cannot produce to A (nothing is written) nor read B", async () => {
      const producer = client("alice").producer({ allowAutoTopicCreation: false });
      await producer.connect();
      try {
        await expect(
          producer.send({ topic: "acl-a", messages: [{ value: "evil", partition: 0 }] }),
        ).rejects.toMatchObject({ type: "TOPIC_AUTHORIZATION_FAILED" });
      } finally {
        await producer.disconnect();
      }
      const refusedKcat = await kcat(
        "alice",
        ["-P", "-t", "acl-a", "-p", "0"],
        "evil-kcat\n",
        REFUSED,
      );
      expect(refusedKcat.code).not.toBe(0);
      expect(refusedKcat.stderr).toMatch(/authoriz/i);
      for (const [topic, value] of [
        ["acl-a", "a-1\na-2\n"],
        ["acl-b", "b-1\n"],
      ] as const) {
        const p = await kcat("admin", ["-P", "-t", topic, "-p", "0"], value);
        expect(p.code, p.stderr).toBe(0);
      }
      expect(await consumed("alice", "acl-a")).toEqual(["a-1", "a-2"]);
      const b = await kcat(
        "alice",
        ["-C", "-t", "acl-b", "-p", "0", "-o", "beginning", "-e", "-q"],
        undefined,
        REFUSED,
      );
      expect(b.stdout).not.toContain("b-1");
      expect(b.code).not.toBe(0);
      expect(await consumed("admin", "acl-b")).toEqual(["b-1"]);
    }, 120_000);

    it("without an ACL for the group or the transactional id, alice's consumer and transactional producer are refused", async () => {
      // librdkafka (kafkajs hides FindCoordinator's error behind "Failed to find group coordinator").
      const consumer = spawnSync(
        "/usr/bin/python3",
        ["-c", GROUP_REFUSED_SCRIPT, kafkaAddresses.join(","), caFile],
        { encoding: "utf8", timeout: 60_000 },
      );
      expect(consumer.stdout.trim(), consumer.stderr).toBe("GROUP_AUTHORIZATION_FAILED");
      // librdkafka's init_transactions: FindCoordinator for the id needs DESCRIBE on it, InitProducerId WRITE.
      const txn = spawnSync(
        "/usr/bin/python3",
        ["-c", TXN_REFUSED_SCRIPT, kafkaAddresses.join(","), caFile],
        { encoding: "utf8", timeout: 60_000 },
      );
      expect(txn.stdout.trim(), txn.stderr).toBe("TRANSACTIONAL_ID_AUTHORIZATION_FAILED");
      // kafkajs' idempotent producer asks any broker for a producer id: without IDEMPOTENT_WRITE on the cluster or WRITE on some topic, refused.
      const idempotent = client("alice").producer({ idempotent: true, maxInFlightRequests: 1 });
      await expect(idempotent.connect()).rejects.toMatchObject({
        type: "CLUSTER_AUTHORIZATION_FAILED",
      });
      await idempotent.disconnect().catch(() => undefined);
    }, 120_000);

    it("tern acl delete of her READ on A cuts alice's open consumer off within about a second", async () => {
      const consumer = client("alice").consumer({
        groupId: "acl-g",
        maxWaitTimeInMs: 100,
        retry: { retries: 0 },
      });
      const seen: string[] = [];
      let crashedAt = 0;
      let crashError: any;
      consumer.on(consumer.events.CRASH, (e: any) => {
        crashedAt = Date.now();
        crashError = e.payload.error;
      });
      try {
        await consumer.connect();
        await consumer.subscribe({ topic: "acl-a", fromBeginning: true });
        await consumer.run({
          eachMessage: async ({ message }) => void seen.push(String(message.value)),
        });
        await until("alice's consumer reads acl-a", 60_000, async () =>
          seen.length >= 2 ? true : undefined,
        );
        const before = Date.now();
        await okCli(bootstrap, [
          ...cliTls,
          "acl",
          "delete",
          "--topic",
          "acl-a",
          "--principal",
          "alice",
        ]);
        const deletedAt = Date.now();
        await until(
          "alice's consumer is cut off",
          30_000,
          async () => (crashedAt > 0 ? true : undefined),
          { intervalMs: 20 },
        );
        process.stderr.write(
          `acl revocation: consumer cut off ${crashedAt - deletedAt} ms after tern acl delete returned (${deletedAt - before} ms in the CLI)\n`,
        );
        // kafkajs wraps the Fetch error in a KafkaJSNonRetriableError.
        expect(crashError?.cause?.type ?? crashError?.type).toBe("TOPIC_AUTHORIZATION_FAILED");
        expect(crashedAt - deletedAt).toBeLessThan(1_500);
        expect(seen).toEqual(["a-1", "a-2"]);
      } finally {
        await consumer.disconnect().catch(() => undefined);
      }
      expect(
        JSON.parse(
          (await okCli(bootstrap, [...cliTls, "--json", "acl", "list", "--principal", "alice"]))
            .stdout,
        ).map((b: any) => b.resourceType),
      ).toEqual(["group"]);
    }, 120_000);
  });

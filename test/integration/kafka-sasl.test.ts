// SASL/SCRAM-SHA-512 on the Kafka listeners of real processes started with TLS, --kafka-sasl
// required and (so that no listener is left open) --grpc-authorizer acl, with librdkafka (kcat)
// as the client nobody here wrote (sasl_ssl): a user made with `tern user create` produces and
// consumes; `tern user list` shows the user and mechanism and no key material; a wrong password
// fails with an authentication error and its record is not in the log; no credentials gets
// nothing; after `tern user delete` a new connection as that user fails. The credentials reach
// the brokers through WatchMetadata only because they present peer certificates (SASL without
// TLS is refused at start: the keys would travel in the clear).
// A transactional confluent-kafka producer authenticates to the coordinators' listeners too.
// Needs kcat and python3-confluent-kafka (Debian packages; .ci/run installs them); skipped with a message when missing.
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
import { okCli, ternCli } from "./helpers/tern-cli.js";

const hasKcat = spawnSync("kcat", ["-V"], { encoding: "utf8" }).status === 0;
if (!hasKcat)
  process.stderr.write(
    "kafka-sasl.test.ts SKIPPED: kcat not found; install with: apt-get install -y kcat\n",
  );
const hasConfluent =
  spawnSync("/usr/bin/python3", ["-c", "import confluent_kafka"], { encoding: "utf8" }).status ===
  0;
if (!hasConfluent)
  process.stderr.write(
    "kafka-sasl.test.ts: the confluent-kafka case is SKIPPED: apt-get install -y python3-confluent-kafka\n",
  );

const { Kafka, logLevel } = kafkajs;
const SHAPE = SASL_TEST_SHAPE;
const ENV = SASL_TEST_ENV;
const BOUNDED = KCAT_BOUNDED;
const REFUSED = KCAT_REFUSED;
const POLL_MS = 300;
const PROPAGATION_TIMEOUT_MS = 20_000;

interface Setup {
  cluster: ProcessCluster;
  dataDir: string;
  bootstrap: string;
  kafka: string;
  /** Extra CLI flags (TLS files) and kcat security settings. */
  cliTls: string[];
  kcatSecurity: (user: string | undefined, password?: string) => string[];
}

async function setUp(): Promise<Setup> {
  const dataDir = mkdtempSync(join(tmpdir(), "tern-sasl-tls-"));
  const cluster = await startCluster({
    dataDir,
    ...SHAPE,
    basePort: await freeBasePort(SHAPE),
    healthTimeoutMs: 150_000,
    env: ENV,
    // The CLI's certificate (CN tern-admin) manages the users.
    extraArgs: [
      "--kafka-sasl",
      "required",
      "--grpc-authorizer",
      "acl",
      "--grpc-super-users",
      "User:tern-admin",
    ],
    tls: true,
  });
  const files = cluster.tls!;
  const cliTls = [
    "--tls-ca-file",
    files.caFile,
    "--tls-cert-file",
    files.client.certFile,
    "--tls-key-file",
    files.client.keyFile,
  ];
  const kcatSecurity = (user: string | undefined, password = ""): string[] => {
    const ssl = ["-X", `ssl.ca.location=${files.caFile}`];
    if (user === undefined) return [...ssl, "-X", "security.protocol=ssl"];
    return [
      ...ssl,
      "-X",
      "security.protocol=sasl_ssl",
      "-X",
      "sasl.mechanisms=SCRAM-SHA-512",
      "-X",
      `sasl.username=${user}`,
      "-X",
      `sasl.password=${password}`,
    ];
  };
  const bootstrap = cluster.addresses("controller").join(",");
  const kafka = cluster
    .processes()
    .filter((p) => p.role === "broker")
    .map((p) => `127.0.0.1:${p.kafkaPort!}`)
    .join(",");
  return { cluster, dataDir, bootstrap, kafka, cliTls, kcatSecurity };
}

async function tearDown(s: Setup | undefined): Promise<void> {
  await s?.cluster.stop({ termTimeoutMs: 5_000 });
  if (s) rmSync(s.dataDir, { recursive: true, force: true });
}

function kcat(s: Setup, security: string[], args: string[], input?: string): Promise<KcatResult> {
  return runKcat(s.kafka, [...security, ...BOUNDED, ...args], {
    ...(input === undefined ? {} : { input }),
    timeoutMs: 60_000,
  });
}

/** kcat for a call that must fail (it waits out REFUSED's bounds). */
function refusedKcat(
  s: Setup,
  security: string[],
  args: string[],
  input?: string,
): Promise<KcatResult> {
  return runKcat(s.kafka, [...security, ...REFUSED, ...args], {
    ...(input === undefined ? {} : { input }),
    timeoutMs: 60_000,
  });
}

/**
 * Polls (bounded) until kcat -L as this user gives the wanted outcome on every broker on its
 * own: credentials reach each broker with its metadata view, not all at the same instant.
 */
async function untilMetadata(s: Setup, security: string[], wantOk: boolean): Promise<KcatResult> {
  const deadline = Date.now() + PROPAGATION_TIMEOUT_MS;
  let last: KcatResult | undefined;
  for (const broker of s.kafka.split(",")) {
    // One deadline for all brokers; the last kcat's stderr goes into the timeout message.
    last = await until(
      `kcat -L on ${broker} to ${wantOk ? "succeed" : "fail"} (${PROPAGATION_TIMEOUT_MS} ms for all brokers)`,
      Math.max(1, deadline - Date.now()),
      async () => {
        const r = await runKcat(
          broker,
          [...security, ...(wantOk ? BOUNDED : REFUSED), "-L", "-J"],
          { timeoutMs: 60_000 },
        );
        if ((r.code === 0) === wantOk) return r;
        throw new Error(`kcat exited ${r.code}: ${r.stderr}`);
      },
      { intervalMs: POLL_MS },
    );
  }
  return last!;
}

async function consumed(s: Setup, topic: string): Promise<string[]> {
  const r = await kcat(s, s.kcatSecurity("alice", "alice-secret"), [
    "-C",
    "-t",
    topic,
    "-p",
    "0",
    "-o",
    "beginning",
    "-e",
    "-q",
  ]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout.split("\n").filter((l) => l.length > 0);
}

async function createTopic(s: Setup, name: string): Promise<void> {
  const admin = new Admin({ bootstrap: s.bootstrap, tls: s.cluster.clientTls });
  try {
    const [r] = await admin.createTopics([{ name, partitions: 1, replicationFactor: 3 }]);
    if (r?.error) throw r.error;
    await admin.waitForLeaders([name]);
  } finally {
    await admin.close();
  }
}

describe.skipIf(!hasKcat).sequential("SASL/SCRAM-SHA-512 on the Kafka listener (sasl_ssl)", () => {
  let s: Setup | undefined;
  beforeAll(async () => {
    s = await setUp();
    await createTopic(s, "sasl-topic");
    await createTopic(s, "sasl-txn");
    await createTopic(s, "sasl-js");
  }, 200_000);
  afterAll(() => tearDown(s), 60_000);

  it("tern user create, then kcat as that user produces and consumes; list shows no keys", async () => {
    await okCli(s!.bootstrap, [
      ...s!.cliTls,
      "user",
      "create",
      "alice",
      "--password",
      "alice-secret",
    ]);
    const list = await okCli(s!.bootstrap, [...s!.cliTls, "--json", "user", "list"]);
    expect(JSON.parse(list.stdout)).toEqual([
      { user: "alice", credentials: [{ mechanism: "SCRAM-SHA-512", iterations: 4096 }] },
    ]);
    expect(list.stdout).not.toMatch(/salt|storedKey|serverKey|alice-secret/i);
    const table = await okCli(s!.bootstrap, [...s!.cliTls, "user", "list"]);
    expect(table.stdout).toMatch(/alice\s+SCRAM-SHA-512\s+4096/);
    await untilMetadata(s!, s!.kcatSecurity("alice", "alice-secret"), true);
    const p = await kcat(
      s!,
      s!.kcatSecurity("alice", "alice-secret"),
      ["-P", "-t", "sasl-topic", "-p", "0"],
      "good-1\ngood-2\n",
    );
    expect(p.code, p.stderr).toBe(0);
    expect(await consumed(s!, "sasl-topic")).toEqual(["good-1", "good-2"]);
  }, 120_000);

  it.skipIf(!hasConfluent)(
    "a transactional confluent-kafka producer authenticates to brokers and coordinators; a wrong password cannot init",
    async () => {
      const script = [
        "import sys",
        "from confluent_kafka import Producer, KafkaException",
        "conf = {'bootstrap.servers': sys.argv[1], 'security.protocol': 'sasl_ssl', 'ssl.ca.location': sys.argv[4], 'sasl.mechanisms': 'SCRAM-SHA-512', 'sasl.username': 'alice', 'sasl.password': sys.argv[2], 'transactional.id': 'sasl-tx-' + sys.argv[2]}",
        "p = Producer(conf)",
        "try:",
        "    p.init_transactions(float(sys.argv[3]))",
        "except KafkaException as e:",
        "    print('init failed: %s' % e, file=sys.stderr)",
        "    sys.exit(3)",
        "p.begin_transaction()",
        "for i in range(5): p.produce('sasl-txn', value=b'tx-%d' % i, partition=0)",
        "p.commit_transaction(30)",
        "sys.exit(0)",
      ].join("\n");
      const good = spawnSync(
        "/usr/bin/python3",
        ["-c", script, s!.kafka, "alice-secret", "20", s!.cluster.tls!.caFile],
        {
          encoding: "utf8",
          timeout: 90_000,
        },
      );
      expect(good.status, good.stderr).toBe(0);
      const bad = spawnSync(
        "/usr/bin/python3",
        ["-c", script, s!.kafka, "wrong-password", "5", s!.cluster.tls!.caFile],
        {
          encoding: "utf8",
          timeout: 90_000,
        },
      );
      expect(bad.status, bad.stderr).not.toBe(0);
      expect(bad.stderr).toMatch(/authenticat/i);
      const r = await kcat(s!, s!.kcatSecurity("alice", "alice-secret"), [
        "-C",
        "-t",
        "sasl-txn",
        "-p",
        "0",
        "-o",
        "beginning",
        "-e",
        "-q",
        "-X",
        "isolation.level=read_committed",
      ]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.split("\n").filter((l) => l.length > 0)).toEqual([
        "tx-0",
        "tx-1",
        "tx-2",
        "tx-3",
        "tx-4",
      ]);
    },
    150_000,
  );

  it("kafkajs with scram-sha-512 produces; with a wrong password connect() fails with an authentication error", async () => {
    const client = (password: string): InstanceType<typeof Kafka> =>
      new Kafka({
        clientId: "sasl-js",
        brokers: s!.kafka.split(","),
        logLevel: logLevel.NOTHING,
        retry: { retries: 2 },
        ssl: { ca: [readFileSync(s!.cluster.tls!.caFile)] },
        sasl: { mechanism: "scram-sha-512", username: "alice", password },
      });
    const producer = client("alice-secret").producer({ allowAutoTopicCreation: false });
    await producer.connect();
    await producer.send({ topic: "sasl-js", messages: [{ value: "js-1", partition: 0 }] });
    await producer.disconnect();
    const wrong = client("bad").producer();
    await expect(wrong.connect()).rejects.toThrow(/authenticat/i);
    await wrong.disconnect().catch(() => undefined);
    expect(await consumed(s!, "sasl-js")).toEqual(["js-1"]);
  }, 120_000);

  it("a wrong password fails with an authentication error and writes nothing", async () => {
    const p = await refusedKcat(
      s!,
      s!.kcatSecurity("alice", "not-her-password"),
      ["-P", "-t", "sasl-topic", "-p", "0"],
      "evil-1\n",
    );
    expect(p.code).not.toBe(0);
    expect(p.stderr).toMatch(/authenticat/i);
    const unknown = await refusedKcat(s!, s!.kcatSecurity("mallory", "whatever"), ["-L"]);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/authenticat/i);
    expect(await consumed(s!, "sasl-topic")).toEqual(["good-1", "good-2"]);
  }, 120_000);

  it("no credentials: kcat gets no metadata and produces nothing", async () => {
    const l = await refusedKcat(s!, s!.kcatSecurity(undefined), ["-L"]);
    expect(l.code).not.toBe(0);
    const p = await refusedKcat(
      s!,
      s!.kcatSecurity(undefined),
      ["-P", "-t", "sasl-topic", "-p", "0"],
      "anon-1\n",
    );
    expect(p.code).not.toBe(0);
    expect(await consumed(s!, "sasl-topic")).toEqual(["good-1", "good-2"]);
  }, 120_000);

  it("after tern user delete, a new connection as that user fails; deleting again is RESOURCE_NOT_FOUND", async () => {
    await okCli(s!.bootstrap, [...s!.cliTls, "user", "create", "bob", "--password-stdin"], {
      stdin: "bob-secret\n",
    });
    await untilMetadata(s!, s!.kcatSecurity("bob", "bob-secret"), true);
    await okCli(s!.bootstrap, [...s!.cliTls, "user", "delete", "bob"]);
    const refused = await untilMetadata(s!, s!.kcatSecurity("bob", "bob-secret"), false);
    expect(refused.stderr).toMatch(/authenticat/i);
    const again = await ternCli(s!.bootstrap, [...s!.cliTls, "user", "delete", "bob"]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain("RESOURCE_NOT_FOUND");
    // alice is untouched.
    expect((await kcat(s!, s!.kcatSecurity("alice", "alice-secret"), ["-L"])).code).toBe(0);
  }, 120_000);
});

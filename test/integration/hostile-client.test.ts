// Hostile clients against real processes (1 controller, 1 broker, 1 coordinator, TLS on every
// listener, `--security acl --super-users User:admin,User:tern-admin`: SASL/SCRAM and ACLs on
// the Kafka listener, ACLs on the gRPC API; tern-admin is the test's client certificate; build
// first), each attack sent frame by frame through a raw TLS socket or a raw gRPC call over TLS
// (docs/security.md, "Hostile clients"): a catastrophic consumer-group regex does not stall the
// broker; a failed SASL authentication is answered only after the failure delay; an unknown user
// is told the iteration count real users have, the same on every attempt; an ACL with a host
// applies to clients from that address only (127.0.0.1 over TLS as over plaintext);
// TxnOffsetCommit needs WRITE on the transactional id; the partition admin RPCs (DescribeLogCleaning,
// DescribeProducers) refuse an oversized list and answer malformed partitions one by one; the data
// directories are closed to other users.
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import type { ConnectionOptions } from "node:tls";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import kafkajs from "kafkajs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Admin } from "../../libs/client/index.js";
import { until } from "../../libs/common/poll.js";
import { loadTernProto } from "../../libs/common/proto.js";
import { digest, hmac, saltedPassword, xor } from "../../libs/common/scram.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { kafkaRequest, KafkaRawConnection } from "./helpers/kafka-raw-client.js";
import { rawSaslLogin } from "./helpers/kafka-raw-sasl.js";
import { sslCredentials } from "./helpers/raw-grpc.js";
import { BROKER_LIMITS } from "../../services/broker/broker-limits.js";

const SHAPE = { controllers: 1, brokers: 1, coordinators: 1 };
const ENV = {
  TERN_LOG_LEVEL: "warn",
  TERN_TXN_STATE_PARTITIONS: "1",
  TERN_TXN_STATE_REPLICATION_FACTOR: "1",
  TERN_OFFSETS_PARTITIONS: "1",
  TERN_OFFSETS_REPLICATION_FACTOR: "1",
};
const ITERATIONS = 8192;
/** Kafka's connection.failed.authentication.delay.ms default, the broker's default here. */
const FAILURE_DELAY_MS = 100;
/** A healthy broker answers a describe well within this even on a loaded 2-core machine. */
const RESPONSIVE_MS = 5_000;
/** `(a+)+` against this name backtracks about 2^80 steps in a JavaScript RegExp. */
const LONG_TOPIC = `${"a".repeat(80)}-b`;
const MATCHING_TOPIC = "aaaa";
const { Kafka, logLevel } = kafkajs;

let cluster: ProcessCluster;
let dataDir: string;
let bootstrap: string;
let brokerGrpc: string;
let brokerKafkaPort: number;
let caFile: string;
/** Raw Kafka sockets trust the cluster CA and present no certificate: they authenticate with SASL. */
let kafkaTls: ConnectionOptions;

const openKafka = (): Promise<KafkaRawConnection> =>
  KafkaRawConnection.openTls(brokerKafkaPort, kafkaTls);

/** A raw GroupCoordinator client as the test's client certificate (tern-admin, a super-user). */
function groupCoordinator(): any {
  return new (loadTernProto().grpc.tern.v1.GroupCoordinator as typeof grpc.Client)(
    brokerGrpc,
    sslCredentials(caFile, cluster.tls!.client),
  );
}

/** A raw Broker client as the test's client certificate (tern-admin, a super-user). */
function brokerClient(): any {
  return new (loadTernProto().grpc.tern.v1.Broker as typeof grpc.Client)(
    brokerGrpc,
    sslCredentials(caFile, cluster.tls!.client),
  );
}

function call(
  client: any,
  method: string,
  request: unknown,
  deadlineMs: number,
): Promise<{ ok: boolean; details: string; response?: any; elapsedMs: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    client[method](
      request,
      { deadline: Date.now() + deadlineMs },
      (err: grpc.ServiceError | null, res: unknown) =>
        resolve({
          ok: err === null,
          details: err?.details ?? "",
          response: res,
          elapsedMs: Date.now() - started,
        }),
    );
  });
}

const handshake = (id: number): Buffer => kafkaRequest(17, 1, id, (w) => w.string("SCRAM-SHA-512"));
const authenticate = (id: number, token: string): Buffer =>
  kafkaRequest(36, 1, id, (w) => w.nullableBytes(Buffer.from(token)));

/** Handshake and client-first for user: the server-first's attributes (r, s, i) and the bare client-first. */
async function serverFirst(
  c: KafkaRawConnection,
  user: string,
): Promise<{ bare: string; text: string; attrs: Record<string, string> }> {
  c.s.write(handshake(1));
  expect((await c.next())!.body.int16()).toBe(0);
  const bare = `n=${user},r=hostilenonce${Date.now()}`;
  c.s.write(authenticate(2, `n,,${bare}`));
  const first = (await c.next())!;
  expect(first.body.int16()).toBe(0);
  first.body.nullableString();
  const text = first.body.nullableBytes()!.toString();
  return { bare, text, attrs: Object.fromEntries(text.split(",").map((x) => [x[0], x.slice(2)])) };
}

function clientFinal(password: string, bare: string, first: string): string {
  const a = Object.fromEntries(first.split(",").map((x) => [x[0], x.slice(2)]));
  const salted = saltedPassword("SCRAM-SHA-512", password, Buffer.from(a.s!, "base64"), +a.i!);
  const clientKey = hmac("sha512", salted, "Client Key");
  const withoutProof = `c=biws,r=${a.r}`;
  const sig = hmac("sha512", digest("sha512", clientKey), `${bare},${first},${withoutProof}`);
  return `${withoutProof},p=${xor(clientKey, sig).toString("base64")}`;
}

const kafkaClient = (user: string): InstanceType<typeof Kafka> =>
  new Kafka({
    clientId: `hostile-${user}`,
    brokers: [`127.0.0.1:${brokerKafkaPort}`],
    logLevel: logLevel.NOTHING,
    retry: { retries: 2, initialRetryTime: 100 },
    ssl: { ca: [readFileSync(caFile)] },
    sasl: { mechanism: "scram-sha-512", username: user, password: `${user}-secret` },
  });

async function listTopicsAs(user: string): Promise<string[]> {
  const admin = kafkaClient(user).admin();
  await admin.connect();
  try {
    return (await admin.listTopics()).sort();
  } finally {
    await admin.disconnect();
  }
}

describe.sequential("hostile clients (real processes)", () => {
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "tern-hostile-"));
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
    kafkaTls = { ca: [readFileSync(caFile)], servername: "localhost" };
    bootstrap = cluster.addresses("controller").join(",");
    const broker = cluster.processes().find((p) => p.role === "broker")!;
    brokerGrpc = broker.address;
    brokerKafkaPort = broker.kafkaPort!;
    const admin = new Admin({ bootstrap, tls: cluster.clientTls });
    try {
      // Every user has the same, non-default iteration count: an unknown name must look alike.
      for (const user of ["admin", "alice"])
        await admin.upsertUserScramCredential(user, `${user}-secret`, { iterations: ITERATIONS });
      const topics = [LONG_TOPIC, MATCHING_TOPIC, "host-a", "host-b"];
      for (const name of topics) {
        const [r] = await admin.createTopics([{ name, partitions: 1, replicationFactor: 1 }]);
        if (r?.error) throw r.error;
      }
      await admin.waitForLeaders(topics);
      const binding = (
        resourceType: "topic" | "group",
        resourceName: string,
        host: string,
      ): import("../../libs/common/acl.js").AclBinding => ({
        principal: "User:alice",
        host,
        resourceType,
        resourceName,
        patternType: "literal",
        operation: "read",
        permission: "allow",
      });
      await admin.createAcls([
        binding("topic", "host-a", "10.1.2.3"),
        binding("topic", "host-b", "127.0.0.1"),
        binding("group", "txn-g", "*"),
      ]);
    } finally {
      await admin.close();
    }
    // Credentials and ACLs reach the broker with its metadata view.
    await until(
      "alice lists host-b",
      20_000,
      async () =>
        (await listTopicsAs("alice").catch((): string[] => [])).includes("host-b") || undefined,
      { intervalMs: 300 },
    );
  }, 200_000);

  afterAll(async () => {
    await cluster?.stop({ termTimeoutMs: 5_000 });
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  it("a catastrophic subscription regex does not stall the broker: it keeps answering, and the regex still matches", async () => {
    const client = groupCoordinator();
    try {
      const heartbeat = call(
        client,
        "ConsumerGroupHeartbeat",
        {
          groupId: "regex-g",
          memberId: "regex-member",
          memberEpoch: 0,
          rebalanceTimeoutMs: 30_000,
          subscribedTopicRegex: "(a+)+",
        },
        RESPONSIVE_MS,
      );
      const describe = call(client, "ConsumerGroupDescribe", { groupId: "other" }, RESPONSIVE_MS);
      const [hb, other] = await Promise.all([heartbeat, describe]);
      expect(other.details, "the broker answers another request meanwhile").not.toContain(
        "Deadline",
      );
      expect(other.elapsedMs).toBeLessThan(RESPONSIVE_MS);
      expect(hb.ok, hb.details).toBe(true);
      // Linear-time RE2 matching: "aaaa" matches (a+)+, the long name does not.
      let epoch = hb.response.memberEpoch as number;
      let assigned = (hb.response.assignment ?? []).map((a: { topic: string }) => a.topic);
      await until(
        "the regex member is assigned aaaa",
        10_000,
        async () => {
          if (assigned.includes(MATCHING_TOPIC)) return true;
          const next = await call(
            client,
            "ConsumerGroupHeartbeat",
            {
              groupId: "regex-g",
              memberId: "regex-member",
              memberEpoch: epoch,
              rebalanceTimeoutMs: 30_000,
              subscribedTopicRegex: "(a+)+",
            },
            RESPONSIVE_MS,
          );
          expect(next.ok, next.details).toBe(true);
          epoch = next.response.memberEpoch;
          assigned = (next.response.assignment ?? []).map((a: { topic: string }) => a.topic);
          return undefined;
        },
        { intervalMs: 200 },
      );
      expect(assigned).toEqual([MATCHING_TOPIC]);
    } finally {
      client.close();
    }
  }, 30_000);

  it("a regex RE2 refuses, or one over 1000 characters, is INVALID_REGULAR_EXPRESSION with the reason", async () => {
    const client = groupCoordinator();
    try {
      for (const [regex, reason] of [
        ["(?<=a)b", "not a valid RE2 regular expression"],
        ["a".repeat(1_001), "at most 1000"],
      ] as const) {
        const r = await call(
          client,
          "ConsumerGroupHeartbeat",
          {
            groupId: "regex-bad",
            memberId: "m",
            memberEpoch: 0,
            rebalanceTimeoutMs: 30_000,
            subscribedTopicRegex: regex,
          },
          RESPONSIVE_MS,
        );
        expect(r.ok).toBe(false);
        expect(r.details).toContain(reason);
      }
    } finally {
      client.close();
    }
  });

  it("a failed SASL authentication is answered only after the failure delay, then the connection closes", async () => {
    const c = await openKafka();
    try {
      const first = await serverFirst(c, "alice");
      const sent = Date.now();
      c.s.write(authenticate(3, clientFinal("wrong-password", first.bare, first.text)));
      const final = (await c.next())!;
      const elapsed = Date.now() - sent;
      expect(final.body.int16()).toBe(58); // SASL_AUTHENTICATION_FAILED
      expect(elapsed).toBeGreaterThanOrEqual(FAILURE_DELAY_MS - 5);
      expect(await c.next()).toBeUndefined();
    } finally {
      c.close();
    }
  });

  it("an unknown user is told the iteration count real users have and the same salt on every attempt", async () => {
    const probe = async (user: string): Promise<Record<string, string>> => {
      const c = await openKafka();
      try {
        return (await serverFirst(c, user)).attrs;
      } finally {
        c.close();
      }
    };
    const real = await probe("alice");
    expect(real.i).toBe(String(ITERATIONS));
    const unknown1 = await probe("nobody");
    const unknown2 = await probe("nobody");
    expect(unknown1.i).toBe(String(ITERATIONS));
    expect(unknown2.i).toBe(unknown1.i);
    expect(unknown2.s).toBe(unknown1.s);
    expect(Buffer.from(unknown1.s!, "base64").length).toBe(Buffer.from(real.s!, "base64").length);
  });

  it("an ACL with a host applies to clients from that address only", async () => {
    const topics = await listTopicsAs("alice");
    expect(topics).toContain("host-b"); // host 127.0.0.1: the test's own address (over TLS too)
    expect(topics).not.toContain("host-a"); // host 10.1.2.3
  });

  it("TxnOffsetCommit without WRITE on the transactional id is TRANSACTIONAL_ID_AUTHORIZATION_FAILED", async () => {
    const c = await rawSaslLogin(brokerKafkaPort, "alice", "alice-secret", { tls: kafkaTls });
    try {
      // v0: transactional_id, group_id, producer_id, producer_epoch, topics [name, [partition, offset, metadata]].
      c.s.write(
        kafkaRequest(28, 0, 4, (w) =>
          w
            .string("not-alices-txn")
            .string("txn-g")
            .int64(1000n)
            .int16(0)
            .array([["host-b", 0]] as const, (x, [topic, partition]) =>
              x
                .string(topic)
                .array([partition], (y, p) => y.int32(p).int64(5n).nullableString(null)),
            ),
        ),
      );
      const answer = (await c.next())!;
      answer.body.int32(); // throttle_time_ms
      const codes = answer.body.array((t) => {
        t.string();
        return t.array((p) => {
          p.int32();
          return p.int16();
        });
      });
      expect(codes.flat()).toEqual([53]); // TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    } finally {
      c.close();
    }
  });

  it("the partition admin RPCs refuse an oversized list whole and answer malformed partitions each with its error", async () => {
    const broker = brokerClient();
    try {
      for (const method of ["DescribeLogCleaning", "DescribeProducers"]) {
        const tooMany = Array.from(
          { length: BROKER_LIMITS.partitionsPerRequestMax + 1 },
          (_, partition) => ({ topic: MATCHING_TOPIC, partition }),
        );
        const refused = await call(broker, method, { partitions: tooMany }, RESPONSIVE_MS * 4);
        expect(refused.ok, method).toBe(false);
        expect(refused.details, method).toContain("partitions in one request");
        // A megabyte of topic name, a negative and a huge partition, a partition with no fields.
        const malformed = await call(
          broker,
          method,
          {
            partitions: [
              { topic: "t".repeat(1_000_000), partition: 0 },
              { topic: MATCHING_TOPIC, partition: -7 },
              { topic: MATCHING_TOPIC, partition: 2 ** 31 - 1 },
              {},
            ],
          },
          RESPONSIVE_MS,
        );
        expect(malformed.ok, `${method}: ${malformed.details}`).toBe(true);
        const codes = malformed.response.partitions.map((p: { errorCode: string }) => p.errorCode);
        expect(codes, method).toEqual(Array(4).fill("UNKNOWN_TOPIC_OR_PARTITION"));
        for (const p of malformed.response.partitions)
          expect(p.errorMessage.length, method).toBeLessThan(1_000); // no echo of the megabyte
        // And the broker still answers a well-formed one at once.
        const fine = await call(
          broker,
          method,
          { partitions: [{ topic: MATCHING_TOPIC, partition: 0 }] },
          RESPONSIVE_MS,
        );
        expect(fine.ok, method).toBe(true);
        expect(fine.response.partitions[0].errorCode, method).toBe("NONE");
      }
    } finally {
      broker.close();
    }
  });

  it("data directories are readable by their owner only (the controller's holds SCRAM keys)", () => {
    const dirs = cluster.specs.map((s) => s.dataDir);
    expect(dirs.length).toBe(3);
    for (const dir of dirs) expect((statSync(dir).mode & 0o777).toString(8), dir).toBe("700");
  });
});

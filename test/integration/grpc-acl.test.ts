// Authentication and ACLs on the gRPC API of real processes (1 controller, 1 broker,
// 1 coordinator with TLS, `--security acl --super-users User:tern-admin`; build
// first). The test process's own certificate is the cluster's client certificate (CN
// tern-admin): the super-user. A caller with no credentials, or a wrong password, is
// UNAUTHENTICATED and nothing it sent is written; alice (a SCRAM password, and separately a
// client certificate with CN alice) with READ on acl-a only cannot produce to acl-a, fetch
// acl-b, use a transactional id or a group she has no ACL for; `tern acl delete` of her READ
// cuts her open Consumer off within a second; the super-user and the cluster's own processes
// (transaction markers, coordinator → broker) keep working.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Admin, Consumer, Producer, type ClientError } from "../../libs/client/index.js";
import { until } from "../../libs/common/poll.js";
import { loadTernProto } from "../../libs/common/proto.js";
import { channelCredentials, type PasswordCredentials } from "../../libs/server/tls/credentials.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import {
  issueCertificate,
  type CertificateFiles,
  type ClusterTlsFiles,
} from "../../scripts/cluster/tls-material.js";
import { ternCli } from "./helpers/tern-cli.js";

const SHAPE = { controllers: 1, brokers: 1, coordinators: 1 };
const ENV = {
  TERN_LOG_LEVEL: "warn",
  TERN_TXN_STATE_PARTITIONS: "2",
  TERN_TXN_STATE_REPLICATION_FACTOR: "1",
  TERN_OFFSETS_PARTITIONS: "2",
  TERN_OFFSETS_REPLICATION_FACTOR: "1",
};
const A = "acl-a";
const B = "acl-b";
const GROUP = "acl-g";
const REGEX_GROUP = "acl-regex";
const ALICE: PasswordCredentials = { username: "alice", password: "alice-secret" };
const CALL_DEADLINE_MS = 5_000;
/** ACL changes must reach every service within this (issue 18). */
const REVOCATION_MS_MAX = 1_000;

let cluster: ProcessCluster;
let dataDir: string;
let bootstrap: string;
let brokerAddress: string;
let tls: ClusterTlsFiles;
let aliceCert: CertificateFiles;
let admin: Admin;

/** The CLI as the super-user (the cluster's client certificate), or with extra global flags. */
const cli = (
  args: string[],
  extra: string[] = [],
): Promise<{ code: number | null; stdout: string; stderr: string }> =>
  ternCli(bootstrap, [
    "--tls-ca-file",
    tls.caFile,
    "--tls-cert-file",
    tls.client.certFile,
    "--tls-key-file",
    tls.client.keyFile,
    ...extra,
    ...args,
  ]);
const okAdminCli = async (args: string[]): Promise<string> => {
  const r = await cli(args);
  if (r.code !== 0) throw new Error(`tern ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return r.stdout;
};

function rawBroker(credentials: grpc.ChannelCredentials): any {
  return new (loadTernProto().grpc.tern.v1.Broker as typeof grpc.Client)(
    brokerAddress,
    credentials,
  );
}

function rawGroups(credentials: grpc.ChannelCredentials): any {
  return new (loadTernProto().grpc.tern.v1.GroupCoordinator as typeof grpc.Client)(
    brokerAddress,
    credentials,
  );
}

function unary(
  client: any,
  method: string,
  request: unknown,
): Promise<{ code: number; details: string; trailer?: string; response?: any }> {
  return new Promise((resolve) => {
    client[method](
      request,
      { deadline: Date.now() + CALL_DEADLINE_MS },
      (err: grpc.ServiceError | null, res: unknown) =>
        resolve(
          err
            ? {
                code: err.code,
                details: err.details,
                trailer: String(err.metadata?.get("tern-error-name")[0] ?? ""),
              }
            : { code: grpc.status.OK, details: "", response: res },
        ),
    );
  });
}

const produceRequest = (topic: string, value: string) => ({
  acks: -1,
  timeoutMs: 5_000,
  partitions: [
    {
      topic,
      partition: 0,
      batch: {
        producerId: "-1",
        producerEpoch: -1,
        baseSequence: -1,
        records: [{ value: Buffer.from(value), timestampMs: String(Date.now()) }],
      },
    },
  ],
});
const fetchRequest = (...topics: string[]) => ({
  maxWaitMs: 0,
  minBytes: 0,
  maxBytes: 0,
  partitions: topics.map((topic) => ({ topic, partition: 0, fetchOffset: "0" })),
});

async function endOffset(topic: string): Promise<bigint> {
  const c = new Consumer({ bootstrap, tls: cluster.clientTls });
  try {
    return (await c.endOffsets([{ topic, partition: 0 }]))[0]!.offset;
  } finally {
    await c.close();
  }
}

async function refusedCode(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
    return undefined;
  } catch (e) {
    return (e as ClientError).code ?? String(e);
  }
}

describe.sequential("ACLs on the gRPC API (--grpc-authorizer acl)", () => {
  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), "tern-grpc-acl-"));
    cluster = await startCluster({
      dataDir,
      ...SHAPE,
      basePort: await freeBasePort(SHAPE),
      healthTimeoutMs: 120_000,
      tls: true,
      env: ENV,
      // One posture for every listener: the Kafka listeners require SASL too (not used here).
      extraArgs: ["--security", "acl", "--super-users", "User:tern-admin"],
    });
    tls = cluster.tls!;
    aliceCert = issueCertificate(tls, "alice", { commonName: "alice" });
    bootstrap = cluster.addresses("controller").join(",");
    brokerAddress = cluster.addresses("broker")[0]!;
    admin = new Admin({ bootstrap, tls: cluster.clientTls });
    for (const name of [A, B]) {
      const [r] = await admin.createTopics([{ name, partitions: 1, replicationFactor: 1 }]);
      if (r?.error) throw r.error;
    }
    await admin.waitForLeaders([A, B, "__transaction_state", "__consumer_offsets"]);
    await okAdminCli(["user", "create", "alice", "--password", ALICE.password]);
    await okAdminCli(["acl", "create", "--allow", "alice", "--operation", "read", "--topic", A]);
    const producer = new Producer({ bootstrap, tls: cluster.clientTls });
    try {
      await producer.send({ topic: A, value: "a-0" });
    } finally {
      await producer.close();
    }
  }, 180_000);

  afterAll(async () => {
    await admin?.close();
    await cluster?.stop({ termTimeoutMs: 5_000 });
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  it("no credentials, or a wrong password: UNAUTHENTICATED, and nothing is written", async () => {
    const anonymous = rawBroker(grpc.credentials.createSsl(readFileSync(tls.caFile)));
    const before = await endOffset(A);
    const r = await unary(anonymous, "Produce", produceRequest(A, "anonymous"));
    expect(r.code, r.details).toBe(grpc.status.UNAUTHENTICATED);
    expect(r.details).toMatch(/needs credentials/);
    // A wrong password is refused even next to the super-user's certificate: explicit credentials win.
    const wrong = rawBroker(channelCredentials({ username: "alice", password: "nope" }));
    const w = await unary(wrong, "Produce", produceRequest(A, "wrong-password"));
    expect(w.code, w.details).toBe(grpc.status.UNAUTHENTICATED);
    expect(w.trailer).toBe("SASL_AUTHENTICATION_FAILED");
    expect(w.details).toMatch(/authentication failed for user "alice"/);
    anonymous.close();
    wrong.close();
    expect(await endOffset(A)).toBe(before);
  });

  it("alice by password, READ on acl-a only: reads acl-a, cannot produce to it, fetch acl-b, or use a transactional id or group", async () => {
    const consumer = new Consumer({ bootstrap, tls: cluster.clientTls, credentials: ALICE });
    try {
      consumer.assign([{ topic: A, partition: 0 }]);
      await consumer.seekToBeginning();
      const got = await until("alice reads acl-a", 10_000, async () => {
        const records = await consumer.poll({ timeoutMs: 500 });
        return records.length > 0 ? records : undefined;
      });
      expect(got[0]!.value?.toString()).toBe("a-0");
    } finally {
      await consumer.close();
    }
    const before = await endOffset(A);
    const plain = new Producer({
      bootstrap,
      tls: cluster.clientTls,
      credentials: ALICE,
      idempotent: false,
      deliveryTimeoutMs: 5_000,
    });
    expect(await refusedCode(plain.send({ topic: A, value: "alice" }))).toBe(
      "TOPIC_AUTHORIZATION_FAILED",
    );
    await plain.close();
    const idempotent = new Producer({
      bootstrap,
      tls: cluster.clientTls,
      credentials: ALICE,
      deliveryTimeoutMs: 5_000,
    });
    expect(await refusedCode(idempotent.send({ topic: A, value: "alice" }))).toBe(
      "CLUSTER_AUTHORIZATION_FAILED",
    );
    await idempotent.close();
    const transactional = new Producer({
      bootstrap,
      tls: cluster.clientTls,
      credentials: ALICE,
      transactionalId: "acl-t1",
    });
    expect(await refusedCode(transactional.initTransactions())).toBe(
      "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    );
    await transactional.close();
    const grouped = new Consumer({
      bootstrap,
      tls: cluster.clientTls,
      credentials: ALICE,
      groupId: "acl-other",
    });
    try {
      expect(await refusedCode(grouped.commitSync([{ topic: A, partition: 0, offset: 1n }]))).toBe(
        "GROUP_AUTHORIZATION_FAILED",
      );
    } finally {
      await grouped.close();
    }
    expect(await endOffset(A)).toBe(before);
    // Fetching acl-b next to acl-a: refused in place, acl-a answered.
    const raw = rawBroker(channelCredentials(ALICE));
    const f = await unary(raw, "Fetch", fetchRequest(B, A));
    raw.close();
    expect(f.code, f.details).toBe(grpc.status.OK);
    expect(f.response.partitions.map((p: any) => `${p.topic}:${p.errorCode}`)).toEqual([
      `${B}:TOPIC_AUTHORIZATION_FAILED`,
      `${A}:NONE`,
    ]);
  });

  it("alice by client certificate (CN alice) gets the same answers; the CLI with --username lists only acl-a", async () => {
    const byCert = rawBroker(
      grpc.credentials.createSsl(
        readFileSync(tls.caFile),
        readFileSync(aliceCert.keyFile),
        readFileSync(aliceCert.certFile),
      ),
    );
    const before = await endOffset(A);
    const p = await unary(byCert, "Produce", produceRequest(A, "alice-cert"));
    const f = await unary(byCert, "Fetch", fetchRequest(A, B));
    byCert.close();
    expect(p.response?.partitions?.[0]?.errorCode, p.details).toBe("TOPIC_AUTHORIZATION_FAILED");
    expect(f.response.partitions.map((x: any) => `${x.topic}:${x.errorCode}`)).toEqual([
      `${A}:NONE`,
      `${B}:TOPIC_AUTHORIZATION_FAILED`,
    ]);
    expect(await endOffset(A)).toBe(before);
    const passwordFile = join(dataDir, "alice.password");
    writeFileSync(passwordFile, `${ALICE.password}\n`, { mode: 0o600 });
    const asAlice = [
      "--tls-ca-file",
      tls.caFile,
      "--username",
      "alice",
      "--password-file",
      passwordFile,
    ];
    const listed = await ternCli(bootstrap, [...asAlice, "--json", "topics", "list"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(A);
    expect(listed.stdout).not.toContain(B);
    const created = await ternCli(bootstrap, [
      ...asAlice,
      "topics",
      "create",
      "acl-c",
      "--partitions",
      "1",
      "--replication-factor",
      "1",
    ]);
    expect(created.code).not.toBe(0);
    expect(created.stderr).toMatch(/TOPIC_AUTHORIZATION_FAILED/);
  });

  /** alice has READ on group acl-g (once, shared by the group tests below). */
  let groupAcl: Promise<void> | undefined;
  const withGroupAcl = (): Promise<void> =>
    (groupAcl ??= okAdminCli([
      "acl",
      "create",
      "--allow",
      "alice",
      "--operation",
      "read",
      "--group",
      GROUP,
    ]).then(() => undefined));
  const offsetOf = (topic: string) => ({
    topic,
    partition: 0,
    offset: "1",
    leaderEpoch: -1,
    metadata: "",
  });

  it("OffsetFetch of all partitions (none named) lists only the topics alice may describe", async () => {
    await withGroupAcl();
    const asAdmin = rawGroups(channelCredentials());
    const asAlice = rawGroups(channelCredentials(ALICE));
    try {
      const committed = await unary(asAdmin, "OffsetCommit", {
        groupId: GROUP,
        generationId: -1,
        memberId: "",
        partitions: [offsetOf(A), offsetOf(B)],
      });
      expect(committed.code, committed.details).toBe(grpc.status.OK);
      const fetched = await until("alice's OffsetFetch is allowed", 10_000, async () => {
        const r = await unary(asAlice, "OffsetFetch", { groupId: GROUP, partitions: [] });
        return r.code === grpc.status.OK ? r : undefined;
      });
      expect(fetched.response.partitions.map((p: any) => p.topic)).toEqual([A]);
    } finally {
      asAdmin.close();
      asAlice.close();
    }
  });

  it("alice's regex subscription acl-.* is assigned only the topics she may describe", async () => {
    await withGroupAcl();
    const asAdmin = rawGroups(channelCredentials());
    const asAlice = rawGroups(channelCredentials(ALICE));
    const heartbeat = (memberEpoch: number) =>
      unary(asAlice, "ConsumerGroupHeartbeat", {
        groupId: REGEX_GROUP,
        memberId: "alice-regex",
        memberEpoch,
        rebalanceTimeoutMs: 30_000,
        subscribedTopicRegex: "acl-.*",
        // A client cannot widen what the authorizer hides: the field is replaced.
        regexHiddenTopics: [],
      });
    try {
      await okAdminCli([
        "acl",
        "create",
        "--allow",
        "alice",
        "--operation",
        "read",
        "--group",
        REGEX_GROUP,
      ]);
      let epoch = 0;
      const assigned = await until("alice's regex member is assigned", 15_000, async () => {
        const r = await heartbeat(epoch);
        if (r.code !== grpc.status.OK) return undefined; // the group ACL is still on its way
        epoch = r.response.memberEpoch;
        const topics = (r.response.assignment ?? []).map((a: any) => a.topic);
        return topics.length > 0 ? topics : undefined;
      });
      // acl-.* matches acl-a and acl-b; alice may describe acl-a only.
      expect(assigned).toEqual([A]);
      const described = await unary(asAdmin, "ConsumerGroupDescribe", { groupId: REGEX_GROUP });
      expect(JSON.stringify(described.response)).not.toContain(B);
      await heartbeat(-1);
    } finally {
      asAdmin.close();
      asAlice.close();
    }
  });

  it("TxnOffsetCommit without WRITE on the transactional id is TRANSACTIONAL_ID_AUTHORIZATION_FAILED (Kafka's first check)", async () => {
    await withGroupAcl();
    const asAlice = rawGroups(channelCredentials(ALICE));
    try {
      const txn = await until("the group ACL reached the broker", 10_000, async () => {
        const r = await unary(asAlice, "TxnOffsetCommit", {
          transactionalId: "alice-txn",
          groupId: GROUP,
          producerId: "1000",
          producerEpoch: 0,
          generationId: -1,
          memberId: "",
          partitions: [offsetOf(A)],
        });
        return r.trailer === "GROUP_AUTHORIZATION_FAILED" ? undefined : r;
      });
      expect(txn.code, txn.details).toBe(grpc.status.PERMISSION_DENIED);
      expect(txn.trailer).toBe("TRANSACTIONAL_ID_AUTHORIZATION_FAILED");
    } finally {
      asAlice.close();
    }
  });

  it(`tern acl delete cuts alice's open consumer off within ${REVOCATION_MS_MAX} ms`, async () => {
    // A fetch already parked at the broker was authorized when it came and answers after its
    // wait: keep that wait short, so the figure is the ACL change's propagation.
    const consumer = new Consumer({
      bootstrap,
      tls: cluster.clientTls,
      credentials: ALICE,
      fetchMaxWaitMs: 100,
    });
    try {
      consumer.assign([{ topic: A, partition: 0 }]);
      await consumer.seekToBeginning();
      await until("alice's consumer reads", 10_000, async () =>
        (await consumer.poll({ timeoutMs: 300 })).length > 0 ? true : undefined,
      );
      await okAdminCli(["acl", "delete", "--principal", "User:alice", "--topic", A]);
      const deletedAt = Date.now();
      const code = await until(
        "alice's poll is refused",
        REVOCATION_MS_MAX * 5,
        async () => {
          try {
            await consumer.poll({ timeoutMs: 100 });
            return undefined;
          } catch (e) {
            return (e as ClientError).code ?? String(e);
          }
        },
        { intervalMs: 10 },
      );
      const cutOffMs = Date.now() - deletedAt;
      process.stderr.write(
        `grpc-acl: alice's consumer cut off ${cutOffMs} ms after tern acl delete returned\n`,
      );
      expect(code).toBe("TOPIC_AUTHORIZATION_FAILED");
      expect(cutOffMs).toBeLessThanOrEqual(REVOCATION_MS_MAX);
    } finally {
      await consumer.close();
    }
  });

  it("the super-user and the cluster's own processes keep working: a transaction commits (markers coordinator → broker)", async () => {
    const producer = new Producer({
      bootstrap,
      tls: cluster.clientTls,
      transactionalId: "acl-admin-txn",
    });
    try {
      await producer.initTransactions();
      producer.beginTransaction();
      await producer.send({ topic: B, value: "b-committed" });
      await producer.commitTransaction();
    } finally {
      await producer.close();
    }
    const consumer = new Consumer({
      bootstrap,
      tls: cluster.clientTls,
      isolationLevel: "read_committed",
    });
    try {
      consumer.assign([{ topic: B, partition: 0 }]);
      await consumer.seekToBeginning();
      const got = await until("the super-user reads the committed record", 15_000, async () => {
        const records = await consumer.poll({ timeoutMs: 500 });
        return records.length > 0 ? records : undefined;
      });
      expect(got.map((r) => r.value?.toString())).toEqual(["b-committed"]);
    } finally {
      await consumer.close();
    }
  });
});

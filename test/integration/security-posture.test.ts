// One security posture for every listener, and peers bound to their node ids, tried from
// outside against real processes (build first with `npx tsc -p tsconfig.json`):
//  - a cluster whose Kafka listeners require SASL (and, explicitly, a gRPC API that does not:
//    TERN_ALLOW_MIXED_SECURITY=true): an anonymous gRPC caller can neither create a user nor an
//    ACL, and its WatchMetadata carries no SCRAM keys; a super-user's certificate can;
//  - in the same cluster, broker 1's certificate cannot report leaders, heartbeat or send Raft
//    frames as node 2, register as a coordinator, or send Raft frames to a controller;
//  - a cluster whose gRPC API requires credentials beside an anonymous Kafka listener: the
//    listener's CreateAcls is checked as its (anonymous) client, not the broker, and stores nothing;
//  - half-secured configurations stop a process at start with one line and exit code 2, as
//    does a certificate bound to another node id; a reload to one is refused (the old
//    certificate keeps serving) while a re-issued certificate of the same node is taken.
import { X509Certificate } from "node:crypto";
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { connect as tlsConnect } from "node:tls";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Admin } from "../../libs/client/index.js";
import { KafkaReader } from "../../libs/records/kafka-codec.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import {
  ensureClusterCa,
  ensureProcessCertificate,
  issueCertificate,
} from "../../scripts/cluster/tls-material.js";
import { until } from "../../libs/common/poll.js";
import { KafkaRawConnection, kafkaRequest } from "./helpers/kafka-raw-client.js";
import { SASL_TEST_ENV } from "./helpers/kcat.js";
import {
  firstWatchedView,
  raftStream,
  rawClient,
  sslCredentials,
  unary,
} from "./helpers/raw-grpc.js";
import { runToExit, spawnServiceProcess } from "./helpers/service-process.js";

const SHAPE = { controllers: 1, brokers: 2, coordinators: 1 };
const START_TIMEOUT_MS = 180_000;

const upsertion = (user: string) => ({
  upsertions: [
    {
      user,
      mechanism: "SCRAM-SHA-512",
      iterations: 4096,
      salt: Buffer.alloc(32, 1),
      saltedPassword: Buffer.alloc(64, 2),
    },
  ],
  deletions: [],
});
const aclCreation = (principal: string) => ({
  creations: [
    {
      principal,
      host: "*",
      resourceType: "topic",
      resourceName: "secret-topic",
      patternType: "literal",
      operation: "all",
      permission: "allow",
    },
  ],
});

async function start(prefix: string, env: NodeJS.ProcessEnv) {
  const dataDir = mkdtempSync(join(tmpdir(), prefix));
  const cluster = await startCluster({
    dataDir,
    basePort: await freeBasePort(),
    ...SHAPE,
    env: { ...SASL_TEST_ENV, ...env },
    tls: true,
    healthTimeoutMs: START_TIMEOUT_MS,
  });
  return { dataDir, cluster };
}

describe.sequential("Kafka listeners require SASL; the gRPC API explicitly does not", () => {
  let cluster: ProcessCluster;
  let dataDir: string;
  let admin: Admin;
  let controllerAddress: string;
  const certs = (name: string) => ({
    certFile: join(cluster.tls!.dir, `${name}.crt`),
    keyFile: join(cluster.tls!.dir, `${name}.key`),
  });

  beforeAll(async () => {
    ({ cluster, dataDir } = await start("tern-posture-sasl-", {
      TERN_KAFKA_SASL: "required",
      TERN_KAFKA_AUTHORIZER: "acl",
      // tern-admin: the test's own client certificate (startCluster's), a super-user.
      TERN_KAFKA_SUPER_USERS: "User:admin,User:tern-admin",
      TERN_ALLOW_MIXED_SECURITY: "true",
    }));
    controllerAddress = cluster.address("controller", 0);
    admin = new Admin({ bootstrap: controllerAddress, tls: cluster.clientTls });
  }, START_TIMEOUT_MS + 30_000);

  afterAll(async () => {
    await admin?.close();
    await cluster?.stop({ termTimeoutMs: 5_000 });
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  it("an anonymous caller cannot create a user or an ACL; the super-user's certificate can", async () => {
    const anonymous = rawClient(
      "Controller",
      controllerAddress,
      sslCredentials(cluster.tls!.caFile),
    );
    const user = await unary(anonymous, "AlterUserScramCredentials", upsertion("mallory"));
    expect(user.code, JSON.stringify(user)).toBe(grpc.status.UNAUTHENTICATED);
    const acl = await unary(anonymous, "CreateAcls", aclCreation("User:mallory"));
    expect(acl.code, JSON.stringify(acl)).toBe(grpc.status.UNAUTHENTICATED);
    // Nothing was stored.
    expect((await admin.describeUserScramCredentials(["mallory"]))[0]?.error).toBeDefined();
    expect(await admin.describeAcls({ principal: "User:mallory" })).toEqual([]);
    // The super-user's certificate (User:tern-admin) is let through.
    await admin.upsertUserScramCredential("alice", "alice-secret");
    const alice = await admin.describeUserScramCredentials(["alice"]);
    expect(alice[0]?.credentials.map((c) => c.mechanism)).toEqual(["SCRAM-SHA-512"]);
    anonymous.close();
  });

  it("WatchMetadata carries SCRAM keys to tern processes only", async () => {
    const anonymous = rawClient(
      "Controller",
      controllerAddress,
      sslCredentials(cluster.tls!.caFile),
    );
    const view = await firstWatchedView(anonymous);
    expect(view.code).toBe(grpc.status.OK);
    expect(view.response.metadata.scramCredentials ?? []).toEqual([]);
    const broker = rawClient(
      "Controller",
      controllerAddress,
      sslCredentials(cluster.tls!.caFile, certs("broker-1")),
    );
    const peerView = await firstWatchedView(broker);
    expect(peerView.response.metadata.scramCredentials.length).toBeGreaterThan(0);
    anonymous.close();
    broker.close();
  });

  it("ReadReplicaRecords answers brokers only, and refuses or bounds hostile ranges", async () => {
    // A user certificate (the super-user's, even) is not a replica: the raw records would
    // bypass every topic ACL.
    const asUser = rawClient(
      "Broker",
      cluster.address("broker", 0),
      sslCredentials(cluster.tls!.caFile, cluster.tls!.client),
    );
    const refused = await unary(asUser, "ReadReplicaRecords", {
      topic: "secret-topic",
      partition: 0,
      fromIndex: "1",
      toIndex: "10",
    });
    expect(refused.code, JSON.stringify(refused)).toBe(grpc.status.PERMISSION_DENIED);
    const asBroker = rawClient(
      "Broker",
      cluster.address("broker", 0),
      sslCredentials(cluster.tls!.caFile, certs("broker-1")),
    );
    for (const [fromIndex, toIndex] of [
      ["0", "10"],
      ["10", "9"],
      ["-5", "9223372036854775807"],
    ]) {
      const r = await unary(asBroker, "ReadReplicaRecords", {
        topic: "secret-topic",
        partition: 0,
        fromIndex,
        toIndex,
      });
      expect(r.code, `${fromIndex}..${toIndex}: ${JSON.stringify(r)}`).not.toBe(grpc.status.OK);
      expect(r.code).not.toBe(grpc.status.UNAVAILABLE);
    }
    // A huge range and byte budget of a partition this broker does not hold: a clear refusal,
    // nothing read.
    const unknown = await unary(asBroker, "ReadReplicaRecords", {
      topic: "no-such-topic",
      partition: 7,
      fromIndex: "1",
      toIndex: "9223372036854775807",
      maxBytes: 2147483647,
    });
    expect(unknown.code, JSON.stringify(unknown)).toBe(grpc.status.OK);
    expect(unknown.response.records.length).toBe(0);
    expect(unknown.response.errorCode).toBe("UNKNOWN_TOPIC_OR_PARTITION");
  });

  it("broker 1's certificate cannot act as node 2, as a coordinator, or in the controllers' Raft group", async () => {
    const credentials = sslCredentials(cluster.tls!.caFile, certs("broker-1"));
    const controller = rawClient("Controller", controllerAddress, credentials);
    const asNode2 = await unary(controller, "ReportLeaders", { nodeId: 2, changes: [] });
    expect(asNode2.code, JSON.stringify(asNode2)).toBe(grpc.status.PERMISSION_DENIED);
    expect(asNode2.details).toMatch(/bound to node 1 .* may not act as node 2/);
    // The same certificate as itself is fine (the check can pass).
    expect((await unary(controller, "ReportLeaders", { nodeId: 1, changes: [] })).code).toBe(
      grpc.status.OK,
    );
    const heartbeat = await unary(controller, "Heartbeat", {
      nodeId: 2,
      role: "BROKER",
      incarnation: "forged",
    });
    expect(heartbeat.code).toBe(grpc.status.PERMISSION_DENIED);
    const register = await unary(controller, "RegisterNode", {
      nodeId: 1,
      role: "COORDINATOR",
      address: "127.0.0.1:1",
      incarnation: "forged",
    });
    expect(register.code, JSON.stringify(register)).toBe(grpc.status.PERMISSION_DENIED);
    // Raft: as node 2 to broker 0 (as node 1 it may), and as a broker to the controller.
    const broker0 = rawClient("RaftTransport", cluster.address("broker", 0), credentials);
    expect((await raftStream(broker0, { fromNodeId: 2, toNodeId: 0 })).code).toBe(
      grpc.status.PERMISSION_DENIED,
    );
    expect((await raftStream(broker0, { fromNodeId: 1, toNodeId: 0 })).code).toBe(grpc.status.OK);
    const controllerRaft = rawClient("RaftTransport", controllerAddress, credentials);
    expect((await raftStream(controllerRaft, { fromNodeId: 1, toNodeId: 0 })).code).toBe(
      grpc.status.PERMISSION_DENIED,
    );
    // Nothing of it reached the controller: no coordinator registered from the forged address.
    const nodes = (await admin.describeCluster()).nodes;
    expect(nodes.filter((n) => n.role === "coordinator").map((n) => n.address)).not.toContain(
      "127.0.0.1:1",
    );
    for (const c of [controller, broker0, controllerRaft]) c.close();
  });
});

describe.sequential(
  "the gRPC API requires credentials; the Kafka listeners explicitly do not",
  () => {
    let cluster: ProcessCluster;
    let dataDir: string;
    let admin: Admin;

    beforeAll(async () => {
      ({ cluster, dataDir } = await start("tern-posture-grpc-", {
        TERN_GRPC_AUTHORIZER: "acl",
        TERN_GRPC_SUPER_USERS: "User:tern-admin",
        TERN_ALLOW_MIXED_SECURITY: "true",
      }));
      admin = new Admin({ bootstrap: cluster.address("controller", 0), tls: cluster.clientTls });
    }, START_TIMEOUT_MS + 30_000);

    afterAll(async () => {
      await admin?.close();
      await cluster?.stop({ termTimeoutMs: 5_000 });
      if (dataDir) rmSync(dataDir, { recursive: true, force: true });
    }, 60_000);

    it("Kafka's CreateAcls from an anonymous client is checked as that client, not as the broker", async () => {
      const broker = cluster.processes().find((p) => p.role === "broker")!;
      const kafka = await KafkaRawConnection.openTls(broker.kafkaPort!, {
        ca: [readFileSync(cluster.tls!.caFile)],
        servername: "localhost",
      });
      try {
        // CreateAcls v1: ALL on topic secret-topic for User:mallory, ALLOW.
        kafka.s.write(
          kafkaRequest(30, 1, 1, (w) => {
            w.int32(1);
            w.int8(2).string("secret-topic").int8(3);
            w.string("User:mallory").string("*").int8(2).int8(3);
          }),
        );
        const answer = await kafka.next(20_000);
        expect(answer?.correlationId).toBe(1);
        const r: KafkaReader = answer!.body;
        r.int32(); // throttle_time_ms
        const results = r.array((x) => ({ code: x.int16(), message: x.nullableString() }));
        expect(results).toHaveLength(1);
        expect(results[0]!.code, results[0]!.message ?? "").not.toBe(0);
      } finally {
        kafka.close();
      }
      expect(await admin.describeAcls({ principal: "User:mallory" })).toEqual([]);
    });
  },
);

describe("half-secured configurations stop a process at start", () => {
  let dataDir: string;
  let files: { ca: string; cert: string; key: string };
  let cases = 0;
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), "tern-posture-start-"));
    // A CA and broker 7's certificate (bound to node 7), as the local cluster issues them.
    const tls = ensureClusterCa(dataDir);
    ensureProcessCertificate(tls, "broker", 7);
    files = {
      ca: tls.caFile,
      cert: join(tls.dir, "broker-7.crt"),
      key: join(tls.dir, "broker-7.key"),
    };
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
  const args = (extra: string[], withTls = true): string[] => [
    "--node-id",
    "7",
    "--listen",
    "127.0.0.1:0",
    "--metrics-listen",
    "127.0.0.1:0",
    "--kafka-listen",
    "127.0.0.1:0",
    "--controllers",
    "0@127.0.0.1:1",
    ...(withTls
      ? ["--tls-ca-file", files.ca, "--tls-cert-file", files.cert, "--tls-key-file", files.key]
      : []),
    ...extra,
    // Last, so it wins: a fresh data directory per case.
    "--data-dir",
    join(dataDir, `case-${++cases}`),
  ];

  it.each([
    [
      "SASL on the Kafka listener, no gRPC authentication",
      ["--kafka-sasl", "required", "--kafka-authorizer", "acl"],
      true,
      /^tern-broker: half-secured configuration: the Kafka listeners require authentication .* --allow-mixed-security true/,
    ],
    [
      "gRPC authentication, an anonymous Kafka listener",
      ["--grpc-authorizer", "acl"],
      true,
      /^tern-broker: half-secured configuration: the gRPC API requires authentication/,
    ],
    [
      "SASL without TLS (the SCRAM keys would travel in the clear)",
      ["--kafka-sasl", "required"],
      false,
      /--kafka-sasl required needs TLS/,
    ],
    [
      "a certificate bound to another node id",
      ["--kafka-sasl", "required", "--grpc-authorizer", "acl", "--node-id", "8"],
      true,
      /bound to tern:node:7, this process is node 8/,
    ],
  ])("%s: exit 2 with one line", async (_name, extra, withTls, message) => {
    // The environment form of --allow-mixed-security: a version without the flag starts anyway.
    const r = await runToExit("broker", args(extra as string[], withTls as boolean), 20_000, {
      ...(withTls ? {} : { TERN_ALLOW_MIXED_SECURITY: "true" }),
    });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(message as RegExp);
  });
});

/** The serial of the certificate a new TLS connection to host:port is given. */
function servedSerial(port: number, caFile: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tlsConnect(
      {
        host: "127.0.0.1",
        port,
        ca: readFileSync(caFile),
        ALPNProtocols: ["h2"],
        servername: "localhost",
      },
      () => {
        const serial = socket.getPeerCertificate().serialNumber;
        socket.destroy();
        resolve(serial.toUpperCase());
      },
    );
    socket.setTimeout(5_000, () => socket.destroy(new Error("TLS handshake timed out")));
    socket.once("error", reject);
  });
}

const serialOf = (certFile: string): string =>
  new X509Certificate(readFileSync(certFile)).serialNumber.toUpperCase();

describe("a certificate reload re-checks the role and the node id", () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), "tern-posture-reload-"));
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it("a broker keeps its certificate when the files turn into another node's, and takes its own re-issued one", async () => {
    const tls = ensureClusterCa(dataDir);
    const own = ensureProcessCertificate(tls, "broker", 7);
    const other = ensureProcessCertificate(tls, "broker", 8);
    const live = { certFile: join(dataDir, "live.crt"), keyFile: join(dataDir, "live.key") };
    copyFileSync(own.keyFile, live.keyFile);
    copyFileSync(own.certFile, live.certFile);
    const port = (await freeBasePort()) + 7;
    const broker = spawnServiceProcess("broker", [
      "--node-id",
      "7",
      "--listen",
      `127.0.0.1:${port}`,
      "--metrics-listen",
      "127.0.0.1:0",
      "--kafka-listen",
      "none",
      "--controllers",
      "0@127.0.0.1:1",
      "--data-dir",
      join(dataDir, "broker-7"),
      "--tls-ca-file",
      tls.caFile,
      "--tls-cert-file",
      live.certFile,
      "--tls-key-file",
      live.keyFile,
      "--tls-reload-ms",
      "100",
    ]);
    try {
      const ownSerial = serialOf(own.certFile);
      await until("the broker serves its own certificate", 30_000, async () =>
        (await servedSerial(port, tls.caFile).catch(() => undefined)) === ownSerial
          ? true
          : undefined,
      );
      // Another node's certificate (same CA, same role): refused at reload.
      copyFileSync(other.keyFile, live.keyFile);
      copyFileSync(other.certFile, live.certFile);
      await until("the reload is refused", 30_000, async () =>
        /do not check out/.test(broker.stdout() + broker.stderr()) &&
        /tern:node:8, this process is node 7/.test(broker.stdout() + broker.stderr())
          ? true
          : undefined,
      );
      expect(await servedSerial(port, tls.caFile)).toBe(ownSerial);
      // Its own certificate, re-issued: taken (so the refusal above was the check, not the reload).
      const renewed = issueCertificate(tls, "broker-7-renewed", {
        commonName: "tern-broker-7",
        role: "broker",
        nodeId: 7,
      });
      copyFileSync(renewed.keyFile, live.keyFile);
      copyFileSync(renewed.certFile, live.certFile);
      const renewedSerial = serialOf(renewed.certFile);
      await until("the re-issued certificate is served", 30_000, async () =>
        (await servedSerial(port, tls.caFile).catch(() => undefined)) === renewedSerial
          ? true
          : undefined,
      );
      expect(broker.child.exitCode).toBeNull();
    } finally {
      broker.child.kill("SIGKILL");
      await broker.waitExit(10_000);
    }
  }, 120_000);
});

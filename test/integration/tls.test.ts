// Real processes with TLS on every listener and mutual TLS between them (1 controller,
// 3 brokers, 1 coordinator; build first with `npx tsc -p tsconfig.json`). A TLS client with the
// cluster CA produces (plain and transactional: markers go coordinator → broker over mTLS) and
// consumes; a plaintext client is refused; callers without a cluster-CA peer certificate get
// UNAUTHENTICATED / PERMISSION_DENIED for Raft traffic, node registration and transaction
// markers, and nothing changes; a certificate replaced on disk is served to new connections
// without a restart (a broken one is not); bad TLS files stop a service at start with one line;
// kcat reaches the Kafka listener over TLS.
import { execFileSync, spawnSync } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connect as tlsConnect } from "node:tls";
import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Admin, Consumer, Producer, type ConsumerRecord } from "../../libs/client/index.js";
import { until } from "../../libs/common/poll.js";
import { loadTernProto } from "../../libs/common/proto.js";
import { freeBasePort } from "../../scripts/cluster/free-base-port.js";
import { startCluster, type ProcessCluster } from "../../scripts/cluster/process-cluster.js";
import { distRoot } from "../../scripts/cluster/process-control.js";
import {
  createCa,
  issueCertificate,
  type ClusterTlsFiles,
} from "../../scripts/cluster/tls-material.js";
import { runKcat } from "./helpers/kcat.js";
import { runToExit } from "./helpers/service-process.js";

const SHAPE = { controllers: 1, brokers: 3, coordinators: 1 };
const TOPIC = "secure";
const RELOAD_MS = 200;
const CALL_DEADLINE_MS = 5_000;
const hasKcat = (() => {
  try {
    execFileSync("kcat", ["-V"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
})();
if (!hasKcat)
  process.stderr.write(
    "tls.test.ts: the kcat case is SKIPPED: kcat not found; install with: apt-get install -y kcat\n",
  );

let cluster: ProcessCluster;
let dataDir: string;
let bootstrap: string;
let admin: Admin;
let tls: ClusterTlsFiles;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "tern-tls-"));
  cluster = await startCluster({
    dataDir,
    ...SHAPE,
    basePort: await freeBasePort(SHAPE),
    healthTimeoutMs: 150_000,
    tls: { reloadMs: RELOAD_MS },
    env: {
      TERN_LOG_LEVEL: "warn",
      TERN_TXN_STATE_PARTITIONS: "2",
      TERN_TXN_STATE_REPLICATION_FACTOR: "1",
      TERN_OFFSETS_PARTITIONS: "2",
    },
  });
  tls = cluster.tls!;
  bootstrap = cluster.addresses("controller").join(",");
  admin = new Admin({ bootstrap, tls: cluster.clientTls });
  const [r] = await admin.createTopics([{ name: TOPIC, partitions: 1, replicationFactor: 3 }]);
  if (r?.error) throw r.error;
  await admin.waitForLeaders([TOPIC, "__transaction_state"]);
}, 200_000);

afterAll(async () => {
  await admin?.close();
  await cluster?.stop({ termTimeoutMs: 5_000 });
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

function proto(): any {
  return loadTernProto().grpc.tern.v1;
}

/** A raw client of one service with the given credentials (no process default involved). */
function rawClient(
  service: "Controller" | "Broker" | "RaftTransport",
  address: string,
  credentials: grpc.ChannelCredentials,
): any {
  return new (proto()[service] as typeof grpc.Client)(address, credentials);
}

function sslCredentials(
  caFile: string,
  identity?: { certFile: string; keyFile: string },
): grpc.ChannelCredentials {
  return grpc.credentials.createSsl(
    readFileSync(caFile),
    identity ? readFileSync(identity.keyFile) : null,
    identity ? readFileSync(identity.certFile) : null,
  );
}

function unary(
  client: any,
  method: string,
  request: unknown,
): Promise<{ code: number; details: string; response?: unknown }> {
  return new Promise((resolve) => {
    client[method](
      request,
      { deadline: Date.now() + CALL_DEADLINE_MS },
      (err: grpc.ServiceError | null, res: unknown) =>
        resolve(
          err
            ? { code: err.code, details: err.details }
            : { code: grpc.status.OK, details: "", response: res },
        ),
    );
  });
}

/** One Raft Stream call carrying a batch: the code it ends with. */
function raftStream(client: any): Promise<{ code: number; details: string }> {
  return new Promise((resolve) => {
    const call = client.Stream(
      { deadline: Date.now() + CALL_DEADLINE_MS },
      (err: grpc.ServiceError | null) =>
        resolve(
          err ? { code: err.code, details: err.details } : { code: grpc.status.OK, details: "" },
        ),
    );
    call.on("error", () => undefined);
    call.write({ fromNodeId: 99, toNodeId: 1, messages: [] });
    call.end();
  });
}

async function readAll(expected: number, timeoutMs = 30_000): Promise<ConsumerRecord[]> {
  const consumer = new Consumer({
    bootstrap,
    tls: cluster.clientTls,
    isolationLevel: "read_committed",
  });
  try {
    consumer.assign([{ topic: TOPIC, partition: 0 }]);
    await consumer.seekToBeginning();
    const out: ConsumerRecord[] = [];
    const deadline = Date.now() + timeoutMs;
    while (out.length < expected && Date.now() < deadline)
      out.push(...(await consumer.poll({ maxPollRecords: 1000, timeoutMs: 500 })));
    return out;
  } finally {
    await consumer.close();
  }
}

/** The serial number of the certificate a new TLS connection to address is given. */
function servedSerial(address: string): Promise<string> {
  const [host, port] = address.split(":");
  return new Promise((resolve, reject) => {
    const socket = tlsConnect(
      {
        host,
        port: Number(port),
        ca: readFileSync(tls.caFile),
        ALPNProtocols: ["h2"],
        servername: "localhost",
      },
      () => {
        const serial = socket.getPeerCertificate().serialNumber;
        socket.destroy();
        resolve(serial.toUpperCase());
      },
    );
    socket.setTimeout(CALL_DEADLINE_MS, () => socket.destroy(new Error("TLS handshake timed out")));
    socket.once("error", reject);
  });
}

function serialOf(certFile: string): string {
  return new X509Certificate(readFileSync(certFile)).serialNumber.toUpperCase();
}

/** Polls (bounded, shared until) until `address` serves the certificate `serial`; the serial last seen goes into the timeout message. */
function untilServed(
  what: string,
  address: string,
  serial: string,
  timeoutMs: number,
): Promise<string> {
  return until(
    what,
    timeoutMs,
    async () => {
      const served = await servedSerial(address);
      if (served !== serial) throw new Error(`last: ${served}`);
      return served;
    },
    { intervalMs: 100 },
  );
}

describe("TLS listeners", () => {
  it("a TLS client with the cluster CA produces (plain and transactional) and consumes", async () => {
    const producer = new Producer({ bootstrap, tls: cluster.clientTls, maxBlockMs: 30_000 });
    try {
      for (let i = 0; i < 5; i++)
        await producer.send({ topic: TOPIC, partition: 0, value: `plain-${i}` });
      await producer.flush();
    } finally {
      await producer.close();
    }
    const txn = new Producer({
      bootstrap,
      tls: cluster.clientTls,
      transactionalId: "tls-txn",
      maxBlockMs: 30_000,
    });
    try {
      await txn.initTransactions();
      txn.beginTransaction();
      for (let i = 0; i < 3; i++) await txn.send({ topic: TOPIC, partition: 0, value: `txn-${i}` });
      await txn.commitTransaction();
    } finally {
      await txn.close();
    }
    const records = await readAll(8);
    expect(records.map((r) => r.value?.toString())).toEqual([
      ...Array.from({ length: 5 }, (_, i) => `plain-${i}`),
      ...Array.from({ length: 3 }, (_, i) => `txn-${i}`),
    ]);
  });

  it("a plaintext client cannot talk to a TLS listener", async () => {
    for (const address of [cluster.address("controller", 0), cluster.address("broker", 0)]) {
      const client = rawClient("Controller", address, grpc.credentials.createInsecure());
      const r = await unary(client, "Metadata", {});
      client.close();
      expect(r.code).toBe(grpc.status.UNAVAILABLE);
    }
  });

  it("the CLI connects with --tls-ca-file and fails without it", () => {
    const cli = join(distRoot(), "cli", "main.js");
    const env = { PATH: process.env.PATH };
    const out = execFileSync(
      process.execPath,
      [cli, "-b", bootstrap, "--tls-ca-file", tls.caFile, "topics", "list"],
      { env, encoding: "utf8", timeout: 30_000 },
    );
    expect(out).toContain(TOPIC);
    let failed = false;
    try {
      execFileSync(process.execPath, [cli, "-b", bootstrap, "topics", "list"], {
        env,
        encoding: "utf8",
        timeout: 30_000,
        stdio: ["ignore", "pipe", "pipe"],
      });
    } catch (e) {
      failed = true;
      expect((e as { status: number }).status).toBe(1);
    }
    expect(failed).toBe(true);
  });
});

describe("the Kafka listener over TLS", () => {
  it.skipIf(!hasKcat)(
    "kcat (librdkafka) with security.protocol=ssl and the CA produces and consumes; plaintext kcat gets no metadata",
    async () => {
      const kafka = cluster
        .processes()
        .filter((p) => p.role === "broker")
        .map((p) => `127.0.0.1:${p.kafkaPort!}`)
        .join(",");
      const ssl = ["-X", "security.protocol=ssl", "-X", `ssl.ca.location=${tls.caFile}`];
      const produced = await runKcat(kafka, [...ssl, "-P", "-t", TOPIC, "-p", "0"], {
        input: "kcat-1\nkcat-2\n",
        timeoutMs: 60_000,
      });
      expect(produced.code, produced.stderr).toBe(0);
      const consumed = await runKcat(
        kafka,
        [...ssl, "-C", "-t", TOPIC, "-p", "0", "-o", "beginning", "-e", "-q"],
        { timeoutMs: 60_000 },
      );
      expect(consumed.code, consumed.stderr).toBe(0);
      expect(consumed.stdout.trim().split("\n").slice(-2)).toEqual(["kcat-1", "kcat-2"]);
      const plain = await runKcat(kafka, ["-L", "-m", "3"], { timeoutMs: 30_000 });
      expect(plain.code).not.toBe(0);
    },
  );
});

describe("peer RPCs need a cluster-CA certificate with a peer role", () => {
  const rogueDir = (): string => join(dataDir, "rogue");

  it("no client certificate: UNAUTHENTICATED for Raft, RegisterNode, WriteTxnMarkers; ordinary calls still work", async () => {
    const creds = sslCredentials(tls.caFile);
    const controller = rawClient("Controller", cluster.address("controller", 0), creds);
    expect((await unary(controller, "Metadata", {})).code).toBe(grpc.status.OK);
    const reg = await unary(controller, "RegisterNode", {
      nodeId: 99,
      role: "BROKER",
      address: "127.0.0.1:1",
      incarnation: "rogue",
    });
    expect(reg.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(reg.details).toContain("RegisterNode");
    expect((await unary(controller, "AllocateProducerIds", { nodeId: 99 })).code).toBe(
      grpc.status.UNAUTHENTICATED,
    );
    controller.close();
    const raft = rawClient("RaftTransport", cluster.address("broker", 1), creds);
    expect((await raftStream(raft)).code).toBe(grpc.status.UNAUTHENTICATED);
    raft.close();
    const broker = rawClient("Broker", cluster.address("broker", 0), creds);
    expect((await unary(broker, "WriteTxnMarkers", { markers: [] })).code).toBe(
      grpc.status.UNAUTHENTICATED,
    );
    broker.close();
  });

  it("a client certificate without a role, or a peer certificate of another CA, is refused; a broker may not write markers", async () => {
    const noRole = sslCredentials(tls.caFile, tls.client);
    const rogueCa = { dir: rogueDir(), ...createCa(rogueDir(), "rogue-ca", "not the cluster CA") };
    const rogueCoordinator = issueCertificate(rogueCa, "rogue-coordinator", {
      commonName: "rogue",
      role: "coordinator",
    });
    const foreign = sslCredentials(tls.caFile, rogueCoordinator);
    const brokerCert = sslCredentials(tls.caFile, {
      certFile: join(tls.dir, "broker-2.crt"),
      keyFile: join(tls.dir, "broker-2.key"),
    });
    const controllerAddress = cluster.address("controller", 0);
    const brokerAddress = cluster.address("broker", 0);

    const c1 = rawClient("Controller", controllerAddress, noRole);
    const r1 = await unary(c1, "RegisterNode", {
      nodeId: 99,
      role: "BROKER",
      address: "127.0.0.1:1",
      incarnation: "rogue",
    });
    expect(r1.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(r1.details).toContain('user "tern-admin"');
    c1.close();
    const raftNoRole = rawClient("RaftTransport", cluster.address("broker", 1), noRole);
    expect((await raftStream(raftNoRole)).code).toBe(grpc.status.PERMISSION_DENIED);
    raftNoRole.close();

    // The server does not verify a certificate of another CA: the caller is anonymous.
    const raftForeign = rawClient("RaftTransport", cluster.address("broker", 1), foreign);
    expect((await raftStream(raftForeign)).code).toBe(grpc.status.UNAUTHENTICATED);
    raftForeign.close();
    const b1 = rawClient("Broker", brokerAddress, foreign);
    expect((await unary(b1, "WriteTxnMarkers", { markers: [] })).code).toBe(
      grpc.status.UNAUTHENTICATED,
    );
    b1.close();

    // A real broker certificate of the cluster CA: markers are the coordinators' alone.
    const b2 = rawClient("Broker", brokerAddress, brokerCert);
    const markers = await unary(b2, "WriteTxnMarkers", {
      markers: [
        {
          producerId: "1",
          producerEpoch: 0,
          controlType: "COMMIT",
          coordinatorEpoch: 0,
          partitions: [{ topic: TOPIC, partition: 0 }],
        },
      ],
    });
    expect(markers.code).toBe(grpc.status.PERMISSION_DENIED);
    expect(markers.details).toContain("peer broker");
    b2.close();

    // Nothing changed: no node 99, the partition's end offset is what the first test left.
    const d = await admin.describeCluster();
    expect(d.nodes.map((n) => n.nodeId)).not.toContain(99);
    expect(d.nodes.length).toBe(SHAPE.brokers + SHAPE.coordinators);
    const end = await admin.listOffset({ topic: TOPIC, partition: 0 }, "latest");
    expect(end).toBe(hasKcat ? 11n : 9n); // 5 plain + 3 transactional + 1 commit marker (+ 2 from kcat)
  });
});

describe("certificate rotation", () => {
  it("a replaced certificate is served to new connections without a restart; a broken one is not", async () => {
    const address = cluster.address("broker", 0);
    const pid = cluster.pid("broker", 0);
    const certFile = join(tls.dir, "broker-0.crt");
    const before = serialOf(certFile);
    expect(await servedSerial(address)).toBe(before);

    // A broken file (not a certificate) is refused by the reload check: the old one keeps serving.
    const good = readFileSync(certFile);
    writeFileSync(certFile, "-----BEGIN CERTIFICATE-----\nbroken\n-----END CERTIFICATE-----\n");
    await new Promise((r) => setTimeout(r, RELOAD_MS * 5)); // several reload checks must have looked at it
    expect(await servedSerial(address)).toBe(before);
    writeFileSync(certFile, good);

    const rotated = issueCertificate(tls, "broker-0", {
      commonName: "tern-broker-0",
      role: "broker",
    });
    const after = serialOf(rotated.certFile);
    expect(after).not.toBe(before);
    await untilServed("the new certificate is served", address, after, 15_000);
    // The Kafka listener of the same process serves it too (same files, same reload).
    const kafkaPort = cluster
      .processes()
      .find((p) => p.role === "broker" && p.id === 0)!.kafkaPort!;
    await untilServed(
      "the Kafka listener serves the new certificate",
      `127.0.0.1:${kafkaPort}`,
      after,
      15_000,
    );
    expect(cluster.pid("broker", 0)).toBe(pid);
    expect(cluster.processes().find((p) => p.role === "broker" && p.id === 0)?.alive).toBe(true);

    // The rotated broker still takes part: a new client produces and reads through it.
    const producer = new Producer({ bootstrap, tls: cluster.clientTls, maxBlockMs: 30_000 });
    try {
      await producer.send({ topic: TOPIC, partition: 0, value: "after-rotation" });
      await producer.flush();
    } finally {
      await producer.close();
    }
    const records = await readAll(hasKcat ? 11 : 9);
    expect(records.at(-1)?.value?.toString()).toBe("after-rotation");
  });
});

describe("CA rotation", () => {
  /** The client-certificate CA names a new TLS connection to address is offered (openssl s_client). */
  const acceptedCaNames = (address: string): string =>
    spawnSync("openssl", ["s_client", "-connect", address, "-servername", "localhost"], {
      input: "",
      encoding: "utf8",
      timeout: CALL_DEADLINE_MS,
    }).stdout ?? "";

  it("a CA-only update (the bundle gains a CA) reaches the Kafka listener as it does the gRPC listener", async () => {
    const next = createCa(tls.dir, "ca-next", "tern-next-ca");
    const kafkaPort = cluster
      .processes()
      .find((p) => p.role === "broker" && p.id === 0)!.kafkaPort!;
    const kafkaAddress = `127.0.0.1:${kafkaPort}`;
    expect(acceptedCaNames(kafkaAddress)).not.toContain("tern-next-ca");
    // Certificates and keys stay as they are: only the trust bundle changes (a CA being added
    // ahead of a CA rotation). The Kafka listener builds its own TLS context from the files.
    writeFileSync(tls.caFile, Buffer.concat([readFileSync(tls.caFile), readFileSync(next.caFile)]));
    await until(
      "the gRPC listener asks for client certificates of the new CA too",
      15_000,
      async () =>
        acceptedCaNames(cluster.address("broker", 0)).includes("tern-next-ca") || undefined,
      { intervalMs: 200 },
    );
    await until(
      "the Kafka listener asks for client certificates of the new CA too",
      15_000,
      async () => acceptedCaNames(kafkaAddress).includes("tern-next-ca") || undefined,
      { intervalMs: 200 },
    );
  });
});

describe("start-up checks of the TLS files", () => {
  const args = (extra: string[]): string[] => [
    "--node-id",
    "7",
    "--listen",
    "127.0.0.1:0",
    "--metrics-listen",
    "127.0.0.1:0",
    "--kafka-listen",
    "none",
    "--controllers",
    "0@127.0.0.1:1",
    "--data-dir",
    join(dataDir, "startup-check"),
    ...extra,
  ];

  it("missing file, key of another certificate, a certificate of another role: exit 2 with one line", async () => {
    const b = { cert: join(tls.dir, "broker-1.crt"), key: join(tls.dir, "broker-1.key") };
    const cases: Array<[string[], RegExp]> = [
      [
        [
          "--tls-ca-file",
          tls.caFile,
          "--tls-cert-file",
          join(dataDir, "nope.crt"),
          "--tls-key-file",
          b.key,
        ],
        /--tls-cert-file .*nope\.crt: cannot read \(no such file\)/,
      ],
      [
        [
          "--tls-ca-file",
          tls.caFile,
          "--tls-cert-file",
          b.cert,
          "--tls-key-file",
          join(tls.dir, "broker-2.key"),
        ],
        /--tls-key-file .* does not match the certificate/,
      ],
      [
        [
          "--tls-ca-file",
          tls.caFile,
          "--tls-cert-file",
          join(tls.dir, "controller-0.crt"),
          "--tls-key-file",
          join(tls.dir, "controller-0.key"),
        ],
        /needs a certificate with the SAN URI tern:role:broker \(this one says controller\)/,
      ],
      [["--tls-ca-file", tls.caFile], /--tls-cert-file and --tls-key-file are required/],
      [
        [
          "--tls-ca-file",
          join(dataDir, "rogue", "rogue-ca.crt"),
          "--tls-cert-file",
          b.cert,
          "--tls-key-file",
          b.key,
        ],
        /is not signed by a CA in --tls-ca-file/,
      ],
    ];
    for (const [extra, message] of cases) {
      const r = await runToExit("broker", args(extra), 20_000);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr.trim().split("\n")).toHaveLength(1);
      expect(r.stderr).toMatch(message);
    }
  });
});

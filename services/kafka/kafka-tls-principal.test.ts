// The Kafka listener's TLS client certificates as principals: a certificate of the cluster CA
// makes the connection User:<CN>, which ACLs name; no certificate, or one of another CA, is
// User:ANONYMOUS. Real TLS sockets, certificates made with openssl (scripts/cluster/tls-material.ts).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../libs/runtime/system-clock.js";
import { silentLogger } from "../../libs/common/logger.js";
import { SERVICE_TLS_FLAGS } from "../../libs/common/tls-config.js";
import type { ClusterMetadata } from "../../libs/metadata/types.js";
import { openTls, type TlsContext } from "../../libs/server/tls/credentials.js";
import { createCa, issueCertificate } from "../../scripts/cluster/tls-material.js";
import {
  kafkaRequest,
  KafkaRawConnection,
} from "../../test/integration/helpers/kafka-raw-client.js";
import { KafkaServer } from "./kafka-server.js";

const metadata: ClusterMetadata = {
  version: "1",
  controllerLeader: 0,
  nodes: [],
  topics: ["a", "b"].map((name) => ({
    name,
    internal: false,
    role: "broker" as const,
    config: {},
    partitions: [],
  })),
  acls: [
    {
      principal: "User:alice",
      host: "*",
      resourceType: "topic",
      resourceName: "a",
      patternType: "literal",
      operation: "describe",
      permission: "allow",
    },
  ],
};

let dir: string;
let tls: TlsContext;
let server: KafkaServer;
let port: number;
let ca: Buffer;
const certs: Record<string, { cert: Buffer; key: Buffer }> = {};

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tern-kafka-tls-principal-"));
  const clusterCa = createCa(join(dir, "ca"), "ca", "test-ca");
  const otherCa = createCa(join(dir, "other"), "ca", "other-ca");
  const broker = issueCertificate(clusterCa, "broker-0", {
    commonName: "broker-0",
    role: "broker",
  });
  for (const [name, issuer] of [
    ["alice", clusterCa],
    ["fake-alice", otherCa],
  ] as const) {
    const f = issueCertificate(issuer, name, { commonName: "alice" });
    certs[name] = { cert: readFileSync(f.certFile), key: readFileSync(f.keyFile) };
  }
  ca = readFileSync(clusterCa.caFile);
  tls = openTls(
    {
      certFile: broker.certFile,
      keyFile: broker.keyFile,
      caFile: clusterCa.caFile,
      reloadMs: 60_000,
    },
    SERVICE_TLS_FLAGS,
  );
  server = new KafkaServer(
    {
      nodeId: 0,
      clusterId: "test",
      logger: silentLogger(),
      metadata: () => metadata,
      kafkaEndpoint: () => undefined,
      produce: async () => [],
      fetch: async () => [],
      listOffsets: async () => [],
      initProducerId: async () => ({ producerId: 1n, producerEpoch: 0 }),
      topicAdmin: {
        createTopics: async () => [],
        deleteTopics: async () => [],
        createPartitions: async () => [],
        configDefaults: () => new Map(),
      },
    },
    { tls, authorizer: { superUsers: [] }, clock: systemClock },
  );
  ({ port } = await server.listen("127.0.0.1", 0));
}, 60_000);

afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Metadata v1 for every topic: the names listed (those the principal may DESCRIBE). */
async function listedTopics(client?: { cert: Buffer; key: Buffer }): Promise<string[]> {
  const c = await KafkaRawConnection.openTls(port, {
    ca,
    servername: "localhost",
    ...(client ?? {}),
  });
  try {
    c.s.write(kafkaRequest(3, 1, 1, (w) => w.int32(-1)));
    const r = (await c.next())!.body;
    r.array((x) => [x.int32(), x.string(), x.int32(), x.nullableString()]);
    r.int32(); // controller id
    return r.array((x) => {
      x.int16();
      const name = x.string();
      x.bool();
      x.array(() => undefined);
      return name;
    });
  } finally {
    c.s.destroy();
  }
}

describe("TLS client certificates on the Kafka listener", () => {
  it("a certificate of the cluster CA is User:<CN>: alice sees the topic her ACL names", async () => {
    expect(await listedTopics(certs.alice)).toEqual(["a"]);
  });

  it("no certificate, or a certificate of another CA with the same CN, is User:ANONYMOUS: no topic", async () => {
    expect(await listedTopics()).toEqual([]);
    expect(await listedTopics(certs["fake-alice"])).toEqual([]);
  });
});

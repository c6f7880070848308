// SASL on the Kafka listener over a real socket (stand-in handlers; the kcat test runs real
// processes): before authentication only ApiVersions and the SASL APIs are served and any other
// request closes the connection; SaslAuthenticate before SaslHandshake is ILLEGAL_SASL_STATE; an
// unknown mechanism is UNSUPPORTED_SASL_MECHANISM with the enabled list; a right password (v1
// framing, v2's flexible one, and v0 raw tokens) opens the connection to every API; a wrong one answers
// SASL_AUTHENTICATION_FAILED (58) and closes; an idle unauthenticated connection is closed.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../libs/runtime/system-clock.js";
import { silentLogger } from "../../libs/common/logger.js";
import {
  keysOfSaltedPassword,
  saltedPassword,
  hmac,
  digest,
  xor,
} from "../../libs/common/scram.js";
import type { ClusterMetadata } from "../../libs/metadata/types.js";
import { KafkaServer } from "./kafka-server.js";
import {
  kafkaRequest,
  KafkaRawConnection,
} from "../../test/integration/helpers/kafka-raw-client.js";

const salt = randomBytes(32);
const metadata: ClusterMetadata = {
  version: "1",
  controllerLeader: 0,
  nodes: [],
  topics: [],
  scramCredentials: [
    {
      user: "alice",
      mechanism: "SCRAM-SHA-512",
      salt,
      iterations: 4096,
      ...keysOfSaltedPassword(
        "SCRAM-SHA-512",
        saltedPassword("SCRAM-SHA-512", "s3cret", salt, 4096),
      ),
    },
  ],
};
let server: KafkaServer;
let port: number;

beforeAll(async () => {
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
    { sasl: "required", saslAuthTimeoutMs: 1_000, clock: systemClock },
  );
  ({ port } = await server.listen("127.0.0.1", 0));
});

afterAll(async () => {
  await server.close();
});

const initProducerIdV4 = (id: number): Buffer =>
  kafkaRequest(
    22,
    4,
    id,
    (w) => w.compactNullableString(null).int32(-1).int64(-1n).int16(-1).noTaggedFields(),
    true,
  );
const handshake = (version: number, id: number, mechanism: string): Buffer =>
  kafkaRequest(17, version, id, (w) => w.string(mechanism));
const authenticate = (id: number, token: string, version = 1): Buffer =>
  kafkaRequest(36, version, id, (w) => w.nullableBytes(Buffer.from(token)));

/** The client's final message for a server-first, computed from the password. */
function clientFinal(password: string, bare: string, serverFirst: string): string {
  const a = Object.fromEntries(serverFirst.split(",").map((x) => [x[0], x.slice(2)]));
  const salted = saltedPassword(
    "SCRAM-SHA-512",
    password,
    Buffer.from(a.s!, "base64"),
    Number(a.i),
  );
  const clientKey = hmac("sha512", salted, "Client Key");
  const withoutProof = `c=biws,r=${a.r}`;
  const sig = hmac("sha512", digest("sha512", clientKey), `${bare},${serverFirst},${withoutProof}`);
  return `${withoutProof},p=${xor(clientKey, sig).toString("base64")}`;
}

/** The SCRAM exchange in SaslAuthenticate v2 (flexible: compact bytes, tagged fields, header v1 both ways). */
async function authenticateV2(
  c: KafkaRawConnection,
  password: string,
): Promise<{ error: number; message: string | null; lifetime: bigint }> {
  c.s.write(handshake(1, 1, "SCRAM-SHA-512"));
  expect((await c.next())!.body.int16()).toBe(0);
  const bare = "n=alice,r=clientnonce456";
  const step = async (token: string) => {
    const r = await c.flexibleCall(36, 2, (w) => {
      w.uvarint(Buffer.byteLength(token) + 1).raw(Buffer.from(token));
      w.uvarint(1).uvarint(3).uvarint(1).int8(0); // an unknown tagged field, skipped
    });
    const out = {
      error: r.int16(),
      message: r.compactNullableString(),
      bytes: r.compactNullableBytes()!.toString(),
      lifetime: r.int64(),
    };
    r.taggedFields();
    expect(r.remaining()).toBe(0);
    return out;
  };
  const first = await step(`n,,${bare}`);
  expect(first.error).toBe(0);
  const final = await step(clientFinal(password, bare, first.bytes));
  return { error: final.error, message: final.message, lifetime: final.lifetime };
}

async function authenticateV1(
  c: KafkaRawConnection,
  password: string,
): Promise<{ error: number; message: string | null }> {
  c.s.write(handshake(1, 1, "SCRAM-SHA-512"));
  const h = (await c.next())!;
  expect(h.body.int16()).toBe(0);
  expect(h.body.array((r) => r.string())).toContain("SCRAM-SHA-512");
  const bare = "n=alice,r=clientnonce123";
  c.s.write(authenticate(2, `n,,${bare}`));
  const first = (await c.next())!;
  expect(first.body.int16()).toBe(0);
  first.body.nullableString();
  const serverFirst = first.body.nullableBytes()!.toString();
  c.s.write(authenticate(3, clientFinal(password, bare, serverFirst)));
  const final = (await c.next())!;
  return { error: final.body.int16(), message: final.body.nullableString() };
}

describe("SASL/SCRAM on the Kafka listener", () => {
  it("authenticates with SaslAuthenticate v2 (flexible), then serves other APIs; a wrong password closes", async () => {
    const c = await KafkaRawConnection.open(port);
    expect(await authenticateV2(c, "s3cret")).toEqual({ error: 0, message: null, lifetime: 0n });
    c.s.write(initProducerIdV4(9));
    expect((await c.next())!.correlationId).toBe(9);
    c.close();
    const bad = await KafkaRawConnection.open(port);
    const refused = await authenticateV2(bad, "wrong");
    expect(refused.error).toBe(58);
    expect(await bad.next()).toBeUndefined();
    expect(bad.closed).toBe(true);
  });

  it("serves ApiVersions before authentication and closes the connection on any other request", async () => {
    const c = await KafkaRawConnection.open(port);
    c.s.write(kafkaRequest(18, 0, 1));
    expect((await c.next())!.body.int16()).toBe(0);
    c.s.write(initProducerIdV4(2));
    expect(await c.next()).toBeUndefined();
    expect(c.closed).toBe(true);
  });

  it("answers SaslAuthenticate before SaslHandshake with ILLEGAL_SASL_STATE, an unknown mechanism with UNSUPPORTED_SASL_MECHANISM", async () => {
    const c = await KafkaRawConnection.open(port);
    c.s.write(handshake(1, 1, "PLAIN"));
    const h = (await c.next())!;
    expect(h.body.int16()).toBe(33);
    expect(h.body.array((r) => r.string())).toEqual(["SCRAM-SHA-512", "SCRAM-SHA-256"]);
    c.s.write(authenticate(2, "n,,n=alice,r=x"));
    expect((await c.next())!.body.int16()).toBe(34);
    expect(await c.next()).toBeUndefined();
  });

  it("authenticates the right password (v1), then serves every API", async () => {
    const c = await KafkaRawConnection.open(port);
    const r = await authenticateV1(c, "s3cret");
    expect(r).toEqual({ error: 0, message: null });
    c.s.write(initProducerIdV4(9));
    const a = (await c.next())!;
    expect(a.correlationId).toBe(9);
    a.body.taggedFields();
    a.body.int32();
    expect(a.body.int16()).toBe(0);
    // A second handshake on an authenticated connection: ILLEGAL_SASL_STATE (no re-authentication).
    c.s.write(handshake(1, 10, "SCRAM-SHA-512"));
    expect((await c.next())!.body.int16()).toBe(34);
    c.s.destroy();
  });

  it("answers a wrong password with SASL_AUTHENTICATION_FAILED and closes the connection", async () => {
    const c = await KafkaRawConnection.open(port);
    const r = await authenticateV1(c, "wrong");
    expect(r.error).toBe(58);
    expect(r.message).toMatch(/Authentication failed.*invalid credentials.*SCRAM-SHA-512/);
    expect(await c.next()).toBeUndefined();
  });

  it("authenticates with raw tokens after a v0 handshake", async () => {
    const c = await KafkaRawConnection.open(port);
    c.s.write(handshake(0, 1, "SCRAM-SHA-512"));
    expect((await c.next())!.body.int16()).toBe(0);
    const raw = (s: string): Buffer => {
      const b = Buffer.from(s);
      const size = Buffer.alloc(4);
      size.writeInt32BE(b.length);
      return Buffer.concat([size, b]);
    };
    const bare = "n=alice,r=rawnonce4567";
    c.s.write(raw(`n,,${bare}`));
    // Raw answers have no correlation id: next() reads the first 4 bytes as one; rebuild the token.
    const readToken = async (): Promise<string> => {
      const a = (await c.next())!;
      const head = Buffer.alloc(4);
      head.writeInt32BE(a.correlationId);
      return Buffer.concat([head, a.body.bytesOf(a.body.remaining())]).toString();
    };
    const serverFirst = await readToken();
    expect(serverFirst).toMatch(/^r=rawnonce4567.+,s=.+,i=4096$/);
    c.s.write(raw(clientFinal("s3cret", bare, serverFirst)));
    expect(await readToken()).toMatch(/^v=/);
    c.s.write(initProducerIdV4(5));
    expect((await c.next())!.correlationId).toBe(5);
    c.s.destroy();
  });

  it("closes a connection that does not authenticate in time", async () => {
    const c = await KafkaRawConnection.open(port);
    const start = Date.now();
    expect(await c.next(5_000)).toBeUndefined();
    expect(Date.now() - start).toBeGreaterThanOrEqual(900);
  });
});

// The listener's framing on a real socket: ApiVersions in v0 and v3 (flexible) layouts, a
// flexible InitProducerId (response header v1), an unknown ApiVersions version answered with
// UNSUPPORTED_VERSION and the table, Produce v0-v2 layouts, answers in request order while a slower request runs, and
// a malformed or oversized frame closing that connection only. The Broker handlers are stand-ins here: the kcat test runs the real ones.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { systemClock } from "../../libs/runtime/system-clock.js";
import { silentLogger } from "../../libs/common/logger.js";
import { until } from "../../libs/common/poll.js";
import { SUPPORTED } from "./api-versions.js";
import type { KafkaWriter } from "../../libs/records/kafka-codec.js";
import { KafkaServer } from "./kafka-server.js";
import {
  kafkaRequest,
  KafkaRawConnection,
} from "../../test/integration/helpers/kafka-raw-client.js";

let server: KafkaServer;
let port: number;
let releaseSlowFetch: () => void = () => undefined;
/** Fetch requests that reached the handler. */
let fetchesStarted = 0;

beforeAll(async () => {
  server = new KafkaServer(
    {
      nodeId: 0,
      clusterId: "test",
      logger: silentLogger(),
      metadata: () => undefined,
      kafkaEndpoint: () => undefined,
      produce: async () => [],
      // Held until released: a later request on the same connection must wait for its answer.
      fetch: () => {
        fetchesStarted++;
        return new Promise((resolve) => (releaseSlowFetch = () => resolve([])));
      },
      listOffsets: async () => [],
      initProducerId: async () => ({ producerId: 1n, producerEpoch: 0 }),
      topicAdmin: {
        createTopics: async () => [],
        deleteTopics: async () => [],
        createPartitions: async () => [],
        configDefaults: () => new Map(),
      },
    },
    { clock: systemClock },
  );
  ({ port } = await server.listen("127.0.0.1", 0));
});

afterAll(async () => {
  await server.close();
});

const request = kafkaRequest;
const Conn = { open: (): Promise<KafkaRawConnection> => KafkaRawConnection.open(port) };

describe("kafka listener framing", () => {
  it("answers ApiVersions v0 and v3 with the supported table", async () => {
    const c = await Conn.open();
    c.s.write(request(18, 0, 7));
    const v0 = (await c.next())!;
    expect(v0.correlationId).toBe(7);
    expect(v0.body.int16()).toBe(0);
    const keys = v0.body.array((r) => ({ key: r.int16(), min: r.int16(), max: r.int16() }));
    expect(keys.map((k) => k.key).sort((a, b) => a - b)).toEqual(
      [...SUPPORTED.keys()].sort((a, b) => a - b),
    );
    c.s.write(
      request(
        18,
        3,
        8,
        (w) => w.compactNullableString("kcat").compactNullableString("1.7").noTaggedFields(),
        true,
      ),
    );
    const v3 = (await c.next())!;
    expect(v3.correlationId).toBe(8);
    expect(v3.body.int16()).toBe(0);
    expect(
      v3.body.compactArray((r) => {
        const k = r.int16();
        r.int16();
        r.int16();
        r.taggedFields();
        return k;
      }).length,
    ).toBe(SUPPORTED.size);
    c.s.destroy();
  });

  it("reads Produce v0-v2 without a transactional id and answers in their layouts; an old-format message set is refused", async () => {
    const c = await Conn.open();
    // A v0 message set (magic 0 at byte 16, as in every format): UNSUPPORTED_FOR_MESSAGE_FORMAT (43).
    const messageSet = Buffer.alloc(80);
    messageSet.writeInt32BE(68, 8);
    const body = (w: KafkaWriter): void =>
      void w
        .int16(1)
        .int32(1000)
        .array(
          ["t"],
          (x, t) =>
            void x.string(t).array([0], (y, p) => void y.int32(p).nullableBytes(messageSet)),
        );
    for (const version of [0, 1, 2]) {
      c.s.write(request(0, version, 20 + version, body));
      const a = (await c.next())!;
      expect(a.correlationId).toBe(20 + version);
      expect(
        a.body.array((x) => [
          x.string(),
          x.array((y) => [y.int32(), y.int16(), y.int64(), ...(version >= 2 ? [y.int64()] : [])]),
        ]),
      ).toEqual([["t", [[0, 43, -1n, ...(version >= 2 ? [-1n] : [])]]]]);
      if (version >= 1) expect(a.body.int32()).toBe(0); // throttle_time_ms
      expect(a.body.remaining()).toBe(0);
    }
    c.s.destroy();
  });

  it("answers a flexible request (InitProducerId v4) with response header v1 and a flexible body", async () => {
    const c = await Conn.open();
    c.s.write(
      request(
        22,
        4,
        11,
        (w) => w.compactNullableString(null).int32(-1).int64(-1n).int16(-1).noTaggedFields(),
        true,
      ),
    );
    const a = (await c.next())!;
    expect(a.correlationId).toBe(11);
    a.body.taggedFields(); // response header v1
    expect(a.body.int32()).toBe(0); // throttle_time_ms
    expect(a.body.int16()).toBe(0);
    expect(a.body.int64()).toBe(1n);
    expect(a.body.int16()).toBe(0);
    a.body.taggedFields();
    expect(a.body.remaining()).toBe(0);
    // The same API at v1 keeps header v0 and the non-flexible body.
    c.s.write(request(22, 1, 12, (w) => w.nullableString(null).int32(-1)));
    const b = (await c.next())!;
    expect(b.correlationId).toBe(12);
    expect([
      b.body.int32(),
      b.body.int16(),
      b.body.int64(),
      b.body.int16(),
      b.body.remaining(),
    ]).toEqual([0, 0, 1n, 0, 0]);
    c.s.destroy();
  });

  it("answers an unknown ApiVersions version with UNSUPPORTED_VERSION in v0's layout", async () => {
    const c = await Conn.open();
    c.s.write(request(18, 99, 1));
    const a = (await c.next())!;
    expect(a.body.int16()).toBe(35);
    expect(a.body.array((r) => r.int16() + r.int16() * 0 + r.int16() * 0).length).toBe(
      SUPPORTED.size,
    );
    c.s.destroy();
  });

  it("keeps answers in request order while an earlier request is still running", async () => {
    const c = await Conn.open();
    const fetchBody = (w: KafkaWriter): void => {
      w.int32(-1)
        .int32(500)
        .int32(1)
        .int32(1 << 20)
        .int8(0); // replica, max wait, min bytes, max bytes, isolation
      w.array([], () => undefined);
    };
    const fetchesBefore = fetchesStarted;
    c.s.write(Buffer.concat([request(1, 4, 1, fetchBody), request(18, 0, 2)]));
    // The ApiVersions answer is ready at once but must not overtake the fetch. The connection
    // dispatches the frames of a chunk in one go, so once the fetch reached its handler the
    // ApiVersions request (same write) is in flight behind it.
    await until(
      "the fetch to reach its handler",
      5_000,
      () => (fetchesStarted > fetchesBefore ? true : undefined),
      { intervalMs: 5 },
    );
    releaseSlowFetch();
    expect((await c.next())!.correlationId).toBe(1);
    expect((await c.next())!.correlationId).toBe(2);
    c.s.destroy();
  });

  it("closes a connection that sends an oversized or malformed frame, or an unsupported API, and keeps serving others", async () => {
    const bad = await Conn.open();
    const huge = Buffer.alloc(4);
    huge.writeInt32BE(200 * 1024 * 1024);
    bad.s.write(huge);
    expect(await bad.next()).toBeUndefined();
    const unknown = await Conn.open();
    unknown.s.write(request(11, 5, 3)); // JoinGroup: not served yet
    expect(await unknown.next()).toBeUndefined();
    const short = await Conn.open();
    short.s.write(request(3, 1, 4, (w) => w.int32(5))); // Metadata claiming 5 topics, sending none
    expect(await short.next()).toBeUndefined();
    const good = await Conn.open();
    good.s.write(request(18, 1, 9));
    expect((await good.next())!.correlationId).toBe(9);
    good.s.destroy();
  });
});

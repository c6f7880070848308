// KafkaConnection alone over a real loopback socket, with a scripted dispatch instead of the
// listener's handlers: answers leave in request order when the handlers finish in reverse; a
// frame split into single bytes is reassembled; a frame over the bound, or a handler that
// fails, closes the connection; before SASL authentication the tighter bound and the gate hold.
// Memory per connection: a client that does not read its answers stops being read, and the
// request bytes in flight stay under their bound; both resume and answer everything in order.
import { createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { systemClock } from "../../libs/runtime/system-clock.js";
import { silentLogger } from "../../libs/common/logger.js";
import { until } from "../../libs/common/poll.js";
import {
  FRAME_BYTES_MAX,
  INFLIGHT_BYTES_PER_CONNECTION_MAX,
  INFLIGHT_PER_CONNECTION_MAX,
  KafkaConnection,
  type KafkaDispatch,
} from "./kafka-connection.js";
import type { SaslMode } from "./sasl-authenticator.js";
import {
  kafkaRequest,
  KafkaRawConnection,
} from "../../test/integration/helpers/kafka-raw-client.js";

let server: Server | undefined;
const sockets = new Set<Socket>();

/** A listener whose every connection is a KafkaConnection over `dispatch`. */
async function listen(dispatch: KafkaDispatch, sasl: SaslMode = "off"): Promise<number> {
  const s = createServer((socket) => {
    sockets.add(socket);
    new KafkaConnection(socket, {
      log: silentLogger(),
      dispatch,
      sasl,
      credential: () => undefined,
      saslAuthTimeoutMs: 10_000,
      clock: systemClock,
    });
  });
  server = s;
  await new Promise<void>((resolve) => s.listen(0, "127.0.0.1", resolve));
  const a = s.address();
  if (typeof a !== "object" || a === null) throw new Error("no address");
  return a.port;
}

afterEach(async () => {
  const s = server;
  server = undefined;
  // A test that failed midway leaves its connection open: close() would wait for it.
  for (const socket of sockets) socket.destroy();
  sockets.clear();
  if (s !== undefined) await new Promise<void>((resolve) => s.close(() => resolve()));
});

/** A dispatch that holds every request until released; answers carry the correlation id. */
function heldDispatch(): { dispatch: KafkaDispatch; held: Map<number, () => void> } {
  const held = new Map<number, () => void>();
  const dispatch: KafkaDispatch = (header) =>
    new Promise((resolve) => {
      held.set(header.correlationId, () => resolve(Buffer.from([header.correlationId])));
    });
  return { dispatch, held };
}

const apiVersionsV0 = (id: number): Buffer => kafkaRequest(18, 0, id);

describe("KafkaConnection", () => {
  it("answers in request order when the handlers finish in reverse order", async () => {
    const { dispatch, held } = heldDispatch();
    const c = await KafkaRawConnection.open(await listen(dispatch));
    c.s.write(Buffer.concat([apiVersionsV0(1), apiVersionsV0(2), apiVersionsV0(3)]));
    await until("three requests dispatched", 5_000, () => (held.size === 3 ? true : undefined), {
      intervalMs: 10,
    });
    for (const id of [3, 2, 1]) held.get(id)!();
    const ids: number[] = [];
    for (let i = 0; i < 3; i++) {
      const a = (await c.next())!;
      expect(a.body.int8()).toBe(a.correlationId);
      ids.push(a.correlationId);
    }
    expect(ids).toEqual([1, 2, 3]);
    c.close();
  });

  it("reassembles a frame that arrives one byte at a time", async () => {
    const c = await KafkaRawConnection.open(await listen(async (h) => Buffer.from([h.apiKey])));
    const frame = apiVersionsV0(42);
    for (const byte of frame) {
      c.s.write(Buffer.from([byte]));
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    const a = (await c.next())!;
    expect(a.correlationId).toBe(42);
    expect(a.body.int8()).toBe(18);
    c.close();
  });

  it("closes the connection on a frame over the bound, without dispatching it", async () => {
    let dispatched = 0;
    const c = await KafkaRawConnection.open(
      await listen(async () => {
        dispatched++;
        return Buffer.alloc(0);
      }),
    );
    const size = Buffer.alloc(4);
    size.writeInt32BE(FRAME_BYTES_MAX + 1);
    c.s.write(size);
    expect(await c.next()).toBeUndefined();
    expect(dispatched).toBe(0);
  });

  it("closes the connection when a handler fails, after the earlier answers went out", async () => {
    const c = await KafkaRawConnection.open(
      await listen(async (h) => {
        if (h.correlationId === 2) throw new Error("handler failed");
        return Buffer.alloc(0);
      }),
    );
    c.s.write(Buffer.concat([apiVersionsV0(1), apiVersionsV0(2), apiVersionsV0(3)]));
    expect((await c.next())!.correlationId).toBe(1);
    expect(await c.next()).toBeUndefined();
  });

  it("before SASL authentication: frames over 64 KiB and APIs other than ApiVersions and SASL close the connection", async () => {
    const port = await listen(async () => Buffer.alloc(0), "required");
    const big = await KafkaRawConnection.open(port);
    const size = Buffer.alloc(4);
    size.writeInt32BE(64 * 1024 + 1);
    big.s.write(size);
    expect(await big.next()).toBeUndefined();
    const gated = await KafkaRawConnection.open(port);
    gated.s.write(apiVersionsV0(1));
    expect((await gated.next())!.correlationId).toBe(1);
    gated.s.write(kafkaRequest(3, 1, 2, (w) => w.int32(0))); // Metadata
    expect(await gated.next()).toBeUndefined();
  });

  it("starts no more requests while its answers are not read, and answers all once they are", async () => {
    let dispatched = 0;
    const answerBytes = 1024 * 1024;
    const c = await KafkaRawConnection.open(
      await listen(async () => {
        dispatched++;
        return Buffer.alloc(answerBytes);
      }),
    );
    c.s.pause(); // reads nothing: answers queue on the listener's side
    const REQUESTS = 3 * INFLIGHT_PER_CONNECTION_MAX;
    const frames: Buffer[] = [];
    for (let id = 1; id <= REQUESTS; id++) frames.push(apiVersionsV0(id));
    c.s.write(Buffer.concat(frames));
    const settled = await stableCount(() => dispatched);
    expect(settled).toBeGreaterThan(0);
    // The first burst, plus the few answers the kernel's socket buffers took before the queue grew.
    expect(settled).toBeLessThan(2 * INFLIGHT_PER_CONNECTION_MAX);
    c.s.resume();
    for (let id = 1; id <= REQUESTS; id++) expect((await c.next(10_000))!.correlationId).toBe(id);
    expect(dispatched).toBe(REQUESTS);
    c.close();
  });

  it("keeps the request bytes in flight under the bound, then serves the rest in order", async () => {
    const { dispatch, held } = heldDispatch();
    const c = await KafkaRawConnection.open(await listen(dispatch));
    const requestBytes = 2 * 1024 * 1024;
    const REQUESTS = 20;
    for (let id = 1; id <= REQUESTS; id++)
      c.s.write(kafkaRequest(18, 0, id, (w) => w.raw(Buffer.alloc(requestBytes))));
    const settled = await stableCount(() => held.size);
    // Started while fewer than the bound's bytes are in flight: the bound plus one request.
    expect(settled).toBe(Math.ceil(INFLIGHT_BYTES_PER_CONNECTION_MAX / (requestBytes + 22)));
    for (let id = 1; id <= REQUESTS; id++) {
      await until(`request ${id} started`, 10_000, () => held.get(id), { intervalMs: 10 });
      held.get(id)!();
      expect((await c.next(10_000))!.correlationId).toBe(id);
    }
    c.close();
  });
});

/** The value once it has not changed for 20 polls 25 ms apart (bounded). */
async function stableCount(read: () => number): Promise<number> {
  let last = -1;
  let same = 0;
  return until(
    "a stable count",
    20_000,
    () => {
      const now = read();
      same = now === last ? same + 1 : 0;
      last = now;
      return same >= 20 ? now : undefined;
    },
    { intervalMs: 25 },
  );
}

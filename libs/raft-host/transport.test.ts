import * as grpc from "@grpc/grpc-js";
import { afterEach, describe, expect, it } from "vitest";
import { silentLogger } from "../common/logger.js";
import { MessageType, type Message } from "../raft/types.js";
import { DEFAULT_LIMITS, resolveLimits } from "./limits.js";
import { RaftTransport, type TransportHandler } from "./transport.js";
import { until as poll } from "../common/poll.js";

interface Received {
  delivered: Array<{ groupId: string; message: Message }>;
  unreachable: Array<{ groupId: string; peer: number }>;
  snapshots: Array<{ groupId: string; peer: number; ok: boolean }>;
}

function handler(r: Received): TransportHandler {
  return {
    deliver: (groupId, message) => r.delivered.push({ groupId, message }),
    unreachable: (groupId, peer) => r.unreachable.push({ groupId, peer }),
    snapshotDone: (groupId, peer, ok) => r.snapshots.push({ groupId, peer, ok }),
  };
}

function message(
  type: MessageType,
  from: number,
  to: number,
  extra: Partial<Message> = {},
): Message {
  return {
    type,
    from,
    to,
    term: 3,
    logTerm: 2,
    index: 7,
    entries: [],
    commit: 5,
    reject: false,
    rejectHint: 0,
    ...extra,
  };
}

/** The shared bounded poll (libs/common/poll.ts) on a condition, every 5 ms. */
const until = (what: string, condition: () => boolean, timeoutMs = 5_000): Promise<true> =>
  poll(what, timeoutMs, () => condition() || undefined, { intervalMs: 5 });

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

async function serve(transport: RaftTransport, options: grpc.ServerOptions = {}): Promise<number> {
  const server = new grpc.Server(options);
  const { definition, implementation } = transport.grpcService();
  server.addService(definition, implementation);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  cleanups.push(() => server.forceShutdown());
  return port;
}

/** Node 1's transport connected to node 2's (served on a free port); both closed after the test. */
async function connectedPair(
  limits: ReturnType<typeof resolveLimits>,
  serverOptions?: grpc.ServerOptions,
): Promise<{ a: RaftTransport; b: RaftTransport; ra: Received; rb: Received }> {
  const ra: Received = { delivered: [], unreachable: [], snapshots: [] };
  const rb: Received = { delivered: [], unreachable: [], snapshots: [] };
  const a = new RaftTransport(1, handler(ra), limits, silentLogger());
  const b = new RaftTransport(2, handler(rb), limits, silentLogger());
  cleanups.push(
    () => a.close(),
    () => b.close(),
  );
  a.setPeerAddress(2, `127.0.0.1:${await serve(b, serverOptions)}`);
  return { a, b, ra, rb };
}

describe("RaftTransport", () => {
  it("coalesces every group's messages for one peer into one frame per flush", async () => {
    const limits = resolveLimits({});
    const { a, b, ra, rb } = await connectedPair(limits);
    const data = new Uint8Array(1024).fill(7);
    for (let g = 0; g < 50; g++) {
      a.send(`topic/${g}`, message(MessageType.Heartbeat, 1, 2));
      a.send(
        `topic/${g}`,
        message(MessageType.Append, 1, 2, { entries: [{ index: 8, term: 3, type: 0, data }] }),
      );
    }
    a.flush();
    await until("100 messages", () => rb.delivered.length === 100);
    expect(a.stats.batchesSent).toBe(1);
    expect(b.stats.batchesReceived).toBe(1);
    expect(rb.delivered[0]!.groupId).toBe("topic/0");
    expect(Buffer.from(rb.delivered[1]!.message.entries[0]!.data).equals(Buffer.from(data))).toBe(
      true,
    );
    expect(rb.delivered[99]!.groupId).toBe("topic/49");
    // Per-group order is kept: heartbeat then append for every group.
    expect(rb.delivered.filter((d) => d.groupId === "topic/7").map((d) => d.message.type)).toEqual([
      MessageType.Heartbeat,
      MessageType.Append,
    ]);
    a.send("x", message(MessageType.Heartbeat, 1, 2));
    a.flush();
    await until("one more", () => rb.delivered.length === 101);
    expect(a.stats.batchesSent).toBe(2);
    expect(ra.unreachable).toEqual([]);
  });

  it("holds empty Appends like heartbeats; a later Append of the group replaces one", async () => {
    const limits = resolveLimits({});
    const { a, ra, rb } = await connectedPair(limits);
    // A commit broadcast waits for the heartbeat flush (the end of a turn flushes with false).
    a.send("g", message(MessageType.Append, 1, 2, { commit: 8 }));
    a.send("h", message(MessageType.Append, 1, 2, { commit: 4 }));
    a.flush(false);
    expect(a.stats.batchesSent).toBe(0);
    // The next proposal's Append replaces g's; h's still rides along in the same frame.
    const entry = { index: 8, term: 3, type: 0, data: new Uint8Array([1]) };
    a.send("g", message(MessageType.Append, 1, 2, { entries: [entry], commit: 8 }));
    a.flush(false);
    await until("two messages", () => rb.delivered.length === 2);
    expect(rb.delivered.map((d) => [d.groupId, d.message.entries.length])).toEqual([
      ["h", 0],
      ["g", 1],
    ]);
    // Alone, an empty Append leaves with the heartbeats.
    a.send("g", message(MessageType.Append, 1, 2, { commit: 9 }));
    a.flush(false);
    expect(a.stats.batchesSent).toBe(1);
    a.flush(true);
    await until("the commit", () => rb.delivered.length === 3);
    expect(rb.delivered[2]!.message.commit).toBe(9);
    expect(ra.unreachable).toEqual([]);
  });

  it("splits a peer's queue into frames the peer's server accepts; drops a message no frame can carry", async () => {
    // The peer accepts 256 KiB per message (in production both sides use GRPC_MESSAGE_BYTES_MAX).
    const frameMax = 256 * 1024;
    const limits = resolveLimits({
      grpcMessageBytesMax: frameMax,
      appendBytesMax: 128 * 1024,
      snapshotChunkBytes: 64 * 1024,
    });
    const { a, ra, rb } = await connectedPair(limits, {
      "grpc.max_receive_message_length": frameMax,
    });
    const data = new Uint8Array(16 * 1024).fill(3);
    for (let g = 0; g < 50; g++)
      a.send(
        `topic/${g}`,
        message(MessageType.Append, 1, 2, { entries: [{ index: 8, term: 3, type: 0, data }] }),
      );
    a.send(
      "huge",
      message(MessageType.Append, 1, 2, {
        entries: [{ index: 8, term: 3, type: 0, data: new Uint8Array(frameMax) }],
      }),
    );
    expect(ra.unreachable).toEqual([{ groupId: "huge", peer: 2 }]);
    a.flush();
    await until("50 messages of 16 KiB (800 KiB)", () => rb.delivered.length === 50);
    expect(a.stats.batchesSent).toBe(4); // 15 + 15 + 15 + 5 messages
    expect(rb.delivered.map((d) => d.groupId)).toEqual(
      Array.from({ length: 50 }, (_, g) => `topic/${g}`),
    );
    expect(ra.unreachable).toEqual([{ groupId: "huge", peer: 2 }]);
  });

  it("drops and reports unreachable when the peer is down or the queue is full", async () => {
    const r: Received = { delivered: [], unreachable: [], snapshots: [] };
    const a = new RaftTransport(
      1,
      handler(r),
      resolveLimits({ peerQueueMessagesMax: 2 }),
      silentLogger(),
    );
    cleanups.push(() => a.close());
    a.send("g", message(MessageType.Heartbeat, 1, 9)); // unknown peer
    expect(r.unreachable).toEqual([{ groupId: "g", peer: 9 }]);
    a.setPeerAddress(3, "127.0.0.1:1"); // nothing listens there
    for (let i = 0; i < 3; i++) a.send(`g${i}`, message(MessageType.Heartbeat, 1, 3));
    expect(r.unreachable.at(-1)).toEqual({ groupId: "g2", peer: 3 }); // queue bound 2
    a.flush();
    await until("disconnect reported", () => r.unreachable.some((u) => u.groupId === "g0"));
  });

  it("streams a snapshot in bounded chunks and reassembles it", async () => {
    const limits = resolveLimits({ snapshotChunkBytes: 1000 });
    const { a, ra, rb } = await connectedPair(limits);
    const data = Uint8Array.from({ length: 10_500 }, (_, i) => i % 251);
    const metadata = {
      index: 40,
      term: 3,
      confState: { voters: [1, 2, 3], learners: [], outgoingVoters: [] },
    };
    a.send("__controller", message(MessageType.Snapshot, 1, 2, { snapshot: { metadata, data } }));
    await until("snapshot acked", () => ra.snapshots.length === 1);
    expect(ra.snapshots[0]).toEqual({ groupId: "__controller", peer: 2, ok: true });
    expect(rb.delivered).toHaveLength(1);
    expect(rb.delivered[0]!.message.snapshot!.metadata).toEqual(metadata);
    expect(Buffer.from(rb.delivered[0]!.message.snapshot!.data).equals(Buffer.from(data))).toBe(
      true,
    );
    expect(DEFAULT_LIMITS.snapshotChunkBytes).toBeGreaterThan(0);
  });
});

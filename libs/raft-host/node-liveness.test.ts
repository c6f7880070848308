// Node-level liveness over real transports: empty beat frames carry the incarnation, a silent
// node is reported after the timeout, a restarted one (new incarnation) at once, and quiesced
// groups wake on either.
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { afterEach, describe, expect, it } from "vitest";
import { silentLogger } from "../common/logger.js";
import { PROTO_LOADER_OPTIONS, protoRoot } from "../common/proto.js";
import type { NodeId, RaftNode } from "../raft/types.js";
import { decodeBatchFrame, encodeBatchFrame, encodeMessageFrame } from "./batch-frame.js";
import { resolveLimits } from "./limits.js";
import { NodeLiveness } from "./node-liveness.js";
import type { RaftBatchWire } from "./raft-proto.js";
import { RaftTransport, type TransportHandler } from "./transport.js";
import { until as poll } from "../common/poll.js";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

/** The shared bounded poll (libs/common/poll.ts) on a condition, every 5 ms. */
const until = (what: string, condition: () => boolean, timeoutMs = 5_000): Promise<true> =>
  poll(what, timeoutMs, () => condition() || undefined, { intervalMs: 5 });

function transport(id: NodeId, restarted: NodeId[] = []): RaftTransport {
  const handler: TransportHandler = {
    deliver: () => {},
    unreachable: () => {},
    snapshotDone: () => {},
    peerRestarted: (p) => restarted.push(p),
  };
  const t = new RaftTransport(id, handler, resolveLimits({}), silentLogger());
  cleanups.push(() => t.close());
  return t;
}

async function serve(t: RaftTransport): Promise<number> {
  const server = new grpc.Server();
  const { definition, implementation } = t.grpcService();
  server.addService(definition, implementation);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    ),
  );
  cleanups.push(() => server.forceShutdown());
  return port;
}

/** A stand-in for a group's core: quiesced until reportNodeDown names its leader. */
function quiescedFollowerOf(leader: NodeId): { node: RaftNode; down: NodeId[] } {
  const down: NodeId[] = [];
  let quiesced = true;
  const node = {
    isQuiesced: () => quiesced,
    reportNodeDown: (id: NodeId) => {
      down.push(id);
      if (id === leader) quiesced = false;
    },
  } as unknown as RaftNode;
  return { node, down };
}

describe("node liveness", () => {
  it("the incarnation field is protobuf field 4 (uint64): protobufjs reads ours and we read theirs", () => {
    const def = protoLoader.loadSync("tern/v1/raft.proto", {
      ...PROTO_LOADER_OPTIONS,
      includeDirs: [protoRoot()],
    });
    const pkg = grpc.loadPackageDefinition(def) as any;
    const ref = (pkg.tern.v1.RaftTransport as grpc.ServiceClientConstructor).service
      .Stream as grpc.MethodDefinition<RaftBatchWire, unknown>;
    const batch: RaftBatchWire = {
      fromNodeId: 1,
      toNodeId: 2,
      messages: [{ groupId: "g/1", message: new Uint8Array([1, 2, 3]) }],
      incarnation: 2 ** 47 + 12345,
    };
    const ours = encodeBatchFrame(batch);
    expect(Buffer.compare(ours, ref.requestSerialize(batch))).toBe(0);
    expect(String((ref.requestDeserialize(ours) as any).incarnation)).toBe(
      String(batch.incarnation),
    );
    expect(decodeBatchFrame(ours).incarnation).toBe(batch.incarnation);
    const beat = encodeMessageFrame(1, 2, [], 77);
    expect(decodeBatchFrame(beat)).toEqual({
      fromNodeId: 1,
      toNodeId: 2,
      messages: [],
      incarnation: 77,
    });
    // Frames without the field (older senders) decode without it.
    expect(decodeBatchFrame(encodeMessageFrame(1, 2, [])).incarnation).toBeUndefined();
  });

  it("beats keep a peer live; silence beyond the timeout reports it down and wakes its quiesced followers", async () => {
    const b = transport(2);
    const a = transport(1);
    a.setPeerAddress(2, `127.0.0.1:${await serve(b)}`);
    b.setPeerAddress(1, "127.0.0.1:1"); // b's own frames to a go nowhere; only receiving matters here
    const livenessB = new NodeLiveness(b, 3, 10);
    const livenessA = new NodeLiveness(a, 1, 10);
    const group = quiescedFollowerOf(1);
    const woken: unknown[] = [];
    // Never heard from: down (a no-op for groups not quiesced, and ours waits for its leader).
    expect(b.silentPeers(10)).toEqual([1]);
    let tick = 0;
    livenessA.tick(++tick, [], () => {}); // a beats (nothing sent to 2 yet)
    await until("b hears a's beat", () => b.silentPeers(10).length === 0);
    // Ticking both for 3 election timeouts with a beating (every tick; b's clock waits for each
    // beat to land, so a slow machine cannot make a late frame look like silence).
    for (let i = 0; i < 30; i++) {
      livenessA.tick(++tick, [], () => {});
      b.clockTicks = tick; // b's clock (tick() sets it too)
      await until(`b hears a's beat of tick ${tick}`, () => b.silentPeers(0).length === 0);
      livenessB.tick(tick, [group], (g) => woken.push(g));
    }
    expect(group.down.filter((id) => id === 1)).toEqual([]);
    expect(woken).toEqual([]);
    // a falls silent: after more than 10 of b's ticks, node 1 is reported down and the group wakes.
    const silentFrom = tick;
    while (woken.length === 0 && tick < silentFrom + 20)
      livenessB.tick(++tick, [group], (g) => woken.push(g));
    expect(woken).toEqual([group]);
    expect(tick - silentFrom).toBe(11);
  });

  it("a new incarnation from a peer (a restart) is reported at once", async () => {
    const restarted: NodeId[] = [];
    const b = transport(2, restarted);
    const port = await serve(b);
    const first = transport(1);
    first.setPeerAddress(2, `127.0.0.1:${port}`);
    first.beat(1);
    await until("first incarnation heard", () => b.silentPeers(10).length === 0);
    expect(restarted).toEqual([]);
    const second = transport(1); // the same node id, restarted: a new incarnation
    expect(second.incarnation).not.toBe(first.incarnation);
    second.setPeerAddress(2, `127.0.0.1:${port}`);
    second.beat(1);
    await until("restart reported", () => restarted.length > 0);
    expect(restarted).toEqual([1]);
  });
});

// The coordinator's marker client: WriteTxnMarkers reaches a real gRPC Broker service and is
// bounded by its timeout; leader lookups read the cluster view as it is now ("no-leader" before
// any metadata or without a leader, "no-topic" for a partition the view lacks); a partition is
// gone only on the controller's linearizable answer.
import * as grpc from "@grpc/grpc-js";
import { afterAll, describe, expect, it } from "vitest";
import { loadTernProto, serviceDefinition } from "../../libs/common/proto.js";
import { ClusterView } from "../../libs/metadata/cluster-view.js";
import type { ClusterMetadata } from "../../libs/metadata/types.js";
import { GrpcServiceTransport } from "../../libs/grpc/grpc-service-transport.js";
import { MarkerClient } from "./marker-client.js";

const servers: grpc.Server[] = [];
const transport = new GrpcServiceTransport();
afterAll(() => {
  transport.close();
  for (const s of servers) s.forceShutdown();
});

/** A Broker service on loopback whose WriteTxnMarkers acknowledges every partition (or never answers). */
async function broker(silent = false): Promise<{ address: string; seen: unknown[] }> {
  const seen: unknown[] = [];
  const server = new grpc.Server();
  servers.push(server);
  server.addService(serviceDefinition(loadTernProto(), "tern.v1.Broker")!, {
    WriteTxnMarkers: (
      call: grpc.ServerUnaryCall<any, unknown>,
      cb: grpc.sendUnaryData<unknown>,
    ) => {
      seen.push(call.request);
      if (silent) return;
      cb(null, {
        results: call.request.markers.map((m: any) => ({
          producerId: m.producerId,
          partitions: m.partitions.map((tp: any) => ({ topicPartition: tp, errorCode: "NONE" })),
        })),
      });
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) =>
      e ? reject(e) : resolve(p),
    ),
  );
  return { address: `127.0.0.1:${port}`, seen };
}

function metadata(leader: number): ClusterMetadata {
  return {
    version: "7",
    controllerLeader: 0,
    nodes: [{ nodeId: 1, role: "broker", address: "10.0.0.1:9092", alive: true, incarnation: "1" }],
    topics: [
      {
        name: "orders",
        internal: false,
        role: "broker",
        config: {},
        partitions: [{ topic: "orders", partition: 0, replicas: [1], leader, leaderTerm: 3 }],
      },
    ],
  };
}

function client(view: ClusterView, linearizable = async () => metadata(1)): MarkerClient {
  return new MarkerClient(transport, view, linearizable);
}

const marker = {
  producerId: "42",
  producerEpoch: 1,
  controlType: "COMMIT" as const,
  coordinatorEpoch: 2,
  transactionalId: "t",
  partitions: [{ topic: "orders", partition: 0 }],
  epochBumped: true,
};

describe("MarkerClient", () => {
  it("sends WriteTxnMarkers to the address given and answers the broker's results", async () => {
    const b = await broker();
    const r = await client(new ClusterView()).transport(b.address, [marker], 5_000);
    expect(b.seen).toHaveLength(1);
    expect(r.results[0]!.producerId).toBe("42");
    expect(r.results[0]!.partitions[0]!.errorCode).toBe("NONE");
  });

  it("gives up on a broker that does not answer once the timeout has passed", async () => {
    const b = await broker(true);
    const started = performance.now();
    await expect(
      client(new ClusterView()).transport(b.address, [marker], 300),
    ).rejects.toMatchObject({ code: grpc.status.DEADLINE_EXCEEDED });
    expect(performance.now() - started).toBeLessThan(3_000);
  });

  it("looks leaders up in the cluster view as it is at each call", () => {
    const view = new ClusterView();
    const c = client(view);
    const tp = { topic: "orders", partition: 0 };
    expect(c.leaderOf(tp)).toBe("no-leader"); // no metadata yet
    view.update(metadata(-1));
    expect(c.leaderOf(tp)).toBe("no-leader");
    expect(c.leaderOf({ topic: "orders", partition: 5 })).toBe("no-topic");
    expect(c.leaderOf({ topic: "gone", partition: 0 })).toBe("no-topic");
    view.update(metadata(1));
    expect(c.leaderOf(tp)).toEqual({ address: "10.0.0.1:9092" });
  });

  it("says a partition is gone only when the controller's answer lacks it", async () => {
    const view = new ClusterView(); // empty local view: not enough to call anything gone
    const c = client(view, async () => metadata(1));
    expect(await c.confirmGone({ topic: "orders", partition: 0 })).toBe(false);
    expect(await c.confirmGone({ topic: "orders", partition: 1 })).toBe(true);
  });
});

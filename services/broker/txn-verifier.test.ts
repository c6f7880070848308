// GrpcTxnVerifier's coordinator lookup: a coordinator that never answers (cut off by a network
// partition: packets dropped, no reset) must not hold a verification for the whole timeout
// while another coordinator can answer; the lookup asks the next one after a short hedge.
import * as grpc from "@grpc/grpc-js";
import { afterAll, describe, expect, it } from "vitest";
import { silentLogger } from "../../libs/common/logger.js";
import { loadTernProto, serviceDefinition } from "../../libs/common/proto.js";
import { GrpcTxnVerifier } from "./txn-verifier.js";

const servers: grpc.Server[] = [];

afterAll(() => {
  for (const s of servers) s.forceShutdown();
});

/** A fake coordinator; `silent` never answers FindCoordinator. */
async function coordinator(silent: boolean): Promise<string> {
  const definition = serviceDefinition(loadTernProto(), "tern.v1.TransactionCoordinator")!;
  const server = new grpc.Server();
  servers.push(server);
  let address = "";
  server.addService(definition, {
    FindCoordinator: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => {
      if (!silent)
        cb(null, { errorCode: "NONE", coordinator: { nodeId: 1, address }, partition: 0 });
    },
    AddPartitionsToTxn: (call: any, cb: grpc.sendUnaryData<unknown>) =>
      cb(null, {
        results: call.request.partitions.map((p: any) => ({
          topic: p.topic,
          partition: p.partition,
          errorCode: "NONE",
        })),
      }),
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) =>
      e ? reject(e) : resolve(p),
    ),
  );
  address = `127.0.0.1:${port}`;
  return address;
}

describe("GrpcTxnVerifier coordinator lookup", () => {
  it("a silent first coordinator delays a verification by the hedge, not by the timeout", async () => {
    const silent = await coordinator(true);
    const live = await coordinator(false);
    const verifier = new GrpcTxnVerifier({
      proto: loadTernProto().grpc,
      coordinators: () => [silent, live],
      logger: silentLogger(),
      timeoutMs: 10_000,
    });
    try {
      const t0 = performance.now();
      expect(await verifier.verify("tid", 7n, 0, "t", 0)).toEqual({ error: "NONE", message: "" });
      expect(performance.now() - t0).toBeLessThan(3_000);
    } finally {
      verifier.close();
    }
  });
});

// GrpcTxnVerifier's coordinator lookup: a coordinator that never answers (cut off by a network
// partition: packets dropped, no reset) must not hold a verification for the whole timeout
// while another coordinator can answer; the lookup asks the next one after a short hedge. The
// address found is remembered per id until the coordinator says it moved, or stays silent on an
// add while FindCoordinator names another node; "add" mode asks the coordinator to add the
// partition (KIP-890 part 2) rather than only verify it.
import * as grpc from "@grpc/grpc-js";
import { afterAll, describe, expect, it } from "vitest";
import { silentLogger } from "../../libs/common/logger.js";
import { loadTernProto, serviceDefinition } from "../../libs/common/proto.js";
import { GrpcTxnVerifier, withoutVerification } from "./txn-verifier.js";

const servers: grpc.Server[] = [];

afterAll(() => {
  for (const s of servers) s.forceShutdown();
});

interface Seen {
  finds: number;
  verifyOnly: boolean[];
}

/** Serves a fake TransactionCoordinator on loopback; the handlers get the address it answers at. */
async function serve(
  handlers: (address: () => string) => grpc.UntypedServiceImplementation,
): Promise<string> {
  const definition = serviceDefinition(loadTernProto(), "tern.v1.TransactionCoordinator")!;
  const server = new grpc.Server();
  servers.push(server);
  let address = "";
  server.addService(
    definition,
    handlers(() => address),
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) =>
      e ? reject(e) : resolve(p),
    ),
  );
  address = `127.0.0.1:${port}`;
  return address;
}

/** An AddPartitionsToTxn answer with `code` for every partition asked. */
function addAnswer(request: any, code: string): unknown {
  return {
    results: request.partitions.map((p: any) => ({
      topicPartition: { topic: p.topic, partition: p.partition },
      errorCode: code,
    })),
  };
}

/** A fake coordinator; `silent` never answers FindCoordinator; `answer` is each partition's code. */
function coordinator(
  silent: boolean,
  seen: Seen = { finds: 0, verifyOnly: [] },
  answer: () => string = () => "NONE",
): Promise<string> {
  return serve((address) => ({
    FindCoordinator: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => {
      seen.finds += 1;
      if (!silent)
        cb(null, {
          errorCode: "NONE",
          coordinator: { nodeId: 1, address: address() },
          partition: 0,
        });
    },
    AddPartitionsToTxn: (call: any, cb: grpc.sendUnaryData<unknown>) => {
      seen.verifyOnly.push(call.request.verifyOnly);
      cb(null, addAnswer(call.request, answer()));
    },
  }));
}

/** A verifier over the given coordinator addresses. */
function verifierOf(coordinators: string[], timeoutMs?: number): GrpcTxnVerifier {
  return new GrpcTxnVerifier({
    proto: loadTernProto().grpc,
    coordinators: () => coordinators,
    logger: silentLogger(),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  });
}

describe("GrpcTxnVerifier coordinator lookup", () => {
  it("a silent first coordinator delays a verification by the hedge, not by the timeout", async () => {
    const silent = await coordinator(true);
    const live = await coordinator(false);
    const verifier = verifierOf([silent, live], 10_000);
    try {
      const t0 = performance.now();
      expect(await verifier.verify("tid", 7n, 0, "t", 0)).toEqual({ error: "NONE", message: "" });
      expect(performance.now() - t0).toBeLessThan(3_000);
    } finally {
      verifier.close();
    }
  });
});

describe("GrpcTxnVerifier add to a remembered coordinator", () => {
  it("a remembered coordinator cut off after a new leader was elected delays an add by the hedges, not by the timeout", async () => {
    const liveSeen: Seen = { finds: 0, verifyOnly: [] };
    const live = await coordinator(false, liveSeen);
    // The old leader: answers as the coordinator until it is cut off, then answers nothing.
    let cut = false;
    let oldCalls = 0;
    const old = await serve((address) => ({
      FindCoordinator: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => {
        oldCalls += 1;
        if (!cut) cb(null, { errorCode: "NONE", coordinator: { nodeId: 0, address: address() } });
      },
      AddPartitionsToTxn: (call: any, cb: grpc.sendUnaryData<unknown>) => {
        oldCalls += 1;
        if (!cut) cb(null, addAnswer(call.request, "NONE"));
      },
    }));
    const verifier = verifierOf([old, live], 10_000);
    try {
      const ok = { error: "NONE", message: "" };
      expect(await verifier.verify("tid", 7n, 0, "t", 0, "add")).toEqual(ok); // remembers old
      cut = true;
      const t0 = performance.now();
      expect(await verifier.verify("tid", 7n, 0, "t", 1, "add")).toEqual(ok);
      // The add's hedge (250 ms), then FindCoordinator (the silent old leader asked last).
      expect(performance.now() - t0).toBeLessThan(3_000);
      // The new address is remembered: the next add goes there at once, with no lookup and
      // nothing asked of the old leader (counted, not timed: a loaded machine stalls timers).
      const [findsBefore, oldCallsBefore, addsBefore] = [
        liveSeen.finds,
        oldCalls,
        liveSeen.verifyOnly.length,
      ];
      expect(await verifier.verify("tid", 7n, 0, "t", 2, "add")).toEqual(ok);
      expect([liveSeen.finds, oldCalls, liveSeen.verifyOnly.length]).toEqual([
        findsBefore,
        oldCallsBefore,
        addsBefore + 1,
      ]);
    } finally {
      verifier.close();
    }
  });
});

describe("GrpcTxnVerifier coordinator address", () => {
  it("is found once per id and found again after the coordinator moved", async () => {
    const seen: Seen = { finds: 0, verifyOnly: [] };
    const answers = ["NONE", "NONE", "NOT_COORDINATOR", "NONE", "NONE"];
    const address = await coordinator(false, seen, () => answers.shift() ?? "NONE");
    const verifier = verifierOf([address]);
    try {
      const ok = { error: "NONE", message: "" };
      expect(await verifier.verify("tid", 7n, 0, "t", 0)).toEqual(ok);
      expect(await verifier.verify("tid", 7n, 0, "t", 1, "add")).toEqual(ok);
      expect(seen.finds).toBe(1);
      expect(seen.verifyOnly).toEqual([true, false]);
      // NOT_COORDINATOR: forgotten, found again, asked again.
      expect(await verifier.verify("tid", 7n, 0, "t", 2)).toEqual(ok);
      expect(seen.finds).toBe(2);
      expect(await verifier.verify("tid", 7n, 0, "t", 3)).toEqual(ok);
      expect(seen.finds).toBe(2);
      expect(seen.verifyOnly).toHaveLength(5);
    } finally {
      verifier.close();
    }
  });
});

describe("withoutVerification", () => {
  it("allows verifications unchecked but still sends V2 adds to the coordinator", async () => {
    const asked: string[] = [];
    const adder = {
      verify: async (...args: Parameters<GrpcTxnVerifier["verify"]>) => {
        asked.push(`${args[3]}/${args[4]}:${args[5] ?? "verify"}`);
        return { error: "PRODUCER_FENCED" as const, message: "fenced" };
      },
      forget: () => undefined,
    };
    const v = withoutVerification(adder);
    expect(await v.verify("tid", 7n, 0, "t", 0)).toEqual({ error: "NONE", message: "" });
    expect(await v.verify("tid", 7n, 0, "t", 1, "add")).toEqual({
      error: "PRODUCER_FENCED",
      message: "fenced",
    });
    expect(asked).toEqual(["t/1:add"]);
  });
});

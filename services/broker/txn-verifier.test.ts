// GrpcTxnVerifier's coordinator lookup: a coordinator that never answers (cut off by a network
// partition: packets dropped, no reset) must not hold a verification for the whole timeout
// while another coordinator can answer; the lookup asks the next one after a short hedge. The
// address found is remembered per id until the coordinator says it moved, or stays silent on an
// add while FindCoordinator names another node; "add" mode asks the coordinator to add the
// partition (KIP-890 part 2) rather than only verify it.
import * as grpc from "@grpc/grpc-js";
import { afterAll, describe, expect, it } from "vitest";
import { systemClock } from "../../libs/runtime/system-clock.js";
import { TernError, type ErrorName } from "../../libs/common/errors.js";
import { toGrpcError } from "../../libs/common/grpc-errors.js";
import { silentLogger } from "../../libs/common/logger.js";
import { loadTernProto, serviceDefinition } from "../../libs/common/proto.js";
import { GrpcServiceTransport } from "../../libs/grpc/grpc-service-transport.js";
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

/** A verifier over the given coordinator addresses, on a transport its close() closes. */
function verifierOf(
  coordinators: string[],
  timeoutMs?: number,
): GrpcTxnVerifier & { close(): void } {
  const transport = new GrpcServiceTransport();
  const verifier = new GrpcTxnVerifier({
    transport,
    coordinators: () => coordinators,
    logger: silentLogger(),
    scheduler: systemClock,
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  });
  return Object.assign(verifier, { close: () => transport.close() });
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

describe("GrpcTxnVerifier refusal from a remembered coordinator", () => {
  /**
   * The old leader, deposed without knowing it (cut off from its quorum, not from us): it still
   * names itself and, once `deposed`, refuses every add with `refusal` from its stale state, as
   * a partition code (`whole` false) or as the whole request's gRPC error.
   */
  async function deposedLeader(
    refusal: string,
    whole: boolean,
  ): Promise<{ address: string; depose: () => void; adds: () => number }> {
    let deposed = false;
    let adds = 0;
    const address = await serve((self) => ({
      FindCoordinator: (_call: unknown, cb: grpc.sendUnaryData<unknown>) =>
        cb(null, { errorCode: "NONE", coordinator: { nodeId: 0, address: self() } }),
      AddPartitionsToTxn: (call: any, cb: grpc.sendUnaryData<unknown>) => {
        adds += 1;
        if (!deposed) return cb(null, addAnswer(call.request, "NONE"));
        if (!whole) return cb(null, addAnswer(call.request, refusal));
        const e = toGrpcError(new TernError(refusal as ErrorName, "stale refusal"));
        cb(e, null);
      },
    }));
    return { address, depose: () => (deposed = true), adds: () => adds };
  }

  for (const [refusal, whole] of [
    ["INVALID_TXN_STATE", false],
    ["INVALID_PRODUCER_EPOCH", false],
    ["INVALID_PRODUCER_EPOCH", true],
  ] as const) {
    it(`finds the coordinator afresh and asks again before passing on ${refusal} (${whole ? "whole request" : "partition"})`, async () => {
      const old = await deposedLeader(refusal, whole);
      const currentSeen: Seen = { finds: 0, verifyOnly: [] };
      let elected = false;
      // The new leader: until its election it names the old leader, as every coordinator did.
      const current = await serve((self) => ({
        FindCoordinator: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => {
          currentSeen.finds += 1;
          const address = elected ? self() : old.address;
          cb(null, { errorCode: "NONE", coordinator: { nodeId: 1, address } });
        },
        AddPartitionsToTxn: (call: any, cb: grpc.sendUnaryData<unknown>) => {
          currentSeen.verifyOnly.push(call.request.verifyOnly);
          cb(null, addAnswer(call.request, "NONE"));
        },
      }));
      const verifier = verifierOf([old.address, current], 10_000);
      try {
        const ok = { error: "NONE", message: "" };
        expect(await verifier.verify("tid", 7n, 0, "t", 0, "add")).toEqual(ok);
        expect(currentSeen.verifyOnly).toEqual([]);
        old.depose();
        elected = true;
        // The new leader answers for the id; the remembered old one refuses from stale state.
        expect(await verifier.verify("tid", 7n, 0, "t", 1, "add")).toEqual(ok);
        expect(old.adds()).toBe(2);
        expect(currentSeen.verifyOnly).toEqual([false]);
        // The fresh address is remembered.
        expect(await verifier.verify("tid", 7n, 0, "t", 2, "add")).toEqual(ok);
        expect([old.adds(), currentSeen.verifyOnly.length]).toEqual([2, 2]);
      } finally {
        verifier.close();
      }
    });
  }

  it("passes a refusal on after one fresh lookup, and at once when the address was just found", async () => {
    const seen: Seen = { finds: 0, verifyOnly: [] };
    const address = await coordinator(false, seen, () => "INVALID_TXN_STATE");
    const verifier = verifierOf([address]);
    try {
      // Found for this verification: its refusal is the answer, with no second lookup.
      expect((await verifier.verify("tid", 7n, 0, "t", 0)).error).toBe("INVALID_TXN_STATE");
      expect([seen.finds, seen.verifyOnly.length]).toEqual([1, 1]);
      // Remembered: the refusal sends the verifier to FindCoordinator once, then it is passed on.
      expect((await verifier.verify("tid", 7n, 0, "t", 1)).error).toBe("INVALID_TXN_STATE");
      expect([seen.finds, seen.verifyOnly.length]).toEqual([2, 3]);
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

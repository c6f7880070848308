// The real process's transport between services, against a real gRPC server on loopback: a
// unary call answers, carries its headers, fails at its deadline, and rejects with the
// server's status and trailers (what fromGrpcError and the controller client's leader hint
// read); a server stream delivers its messages and reports its end once, after the server ends
// it or the caller cancels it; a closed transport refuses new calls.
import * as grpc from "@grpc/grpc-js";
import { afterAll, describe, expect, it } from "vitest";
import { TernError } from "../common/errors.js";
import { fromGrpcError, toGrpcError } from "../common/grpc-errors.js";
import { controllerProto } from "../metadata/controller-proto.js";
import { GrpcServiceTransport } from "./grpc-service-transport.js";

const servers: grpc.Server[] = [];
const transport = new GrpcServiceTransport();
afterAll(() => {
  transport.close();
  for (const s of servers) s.forceShutdown();
});

/** A Controller service on loopback: ListTopics echoes a header, DescribeTopics refuses, Metadata never answers, WatchMetadata sends three views and ends. */
async function controller(): Promise<string> {
  const server = new grpc.Server();
  servers.push(server);
  server.addService(controllerProto().definition, {
    ListTopics: (call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) =>
      cb(null, { names: [String(call.metadata.get("x-test")[0] ?? "none")] }),
    DescribeTopics: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => {
      const e = toGrpcError(new TernError("NOT_CONTROLLER", "ask controller 2"));
      e.metadata.set("tern-controller-leader-id", "2");
      cb(e, null);
    },
    Metadata: () => undefined,
    WatchMetadata: (call: grpc.ServerWritableStream<unknown, unknown>) => {
      for (const version of ["1", "2", "3"]) call.write({ metadata: { version } });
      call.end();
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) =>
      e ? reject(e) : resolve(p),
    ),
  );
  return `127.0.0.1:${port}`;
}

describe("GrpcServiceTransport", () => {
  it("answers a unary call and sends its headers as call metadata", async () => {
    const address = await controller();
    const plain = await transport.unary(
      "Controller",
      address,
      "ListTopics",
      {},
      { timeoutMs: 5_000 },
    );
    expect(plain.names).toEqual(["none"]);
    const withHeader = await transport.unary(
      "Controller",
      address,
      "ListTopics",
      {},
      { timeoutMs: 5_000, headers: { "x-test": "hello" } },
    );
    expect(withHeader.names).toEqual(["hello"]);
  });

  it("rejects with the server's status and trailers", async () => {
    const address = await controller();
    const e = await transport
      .unary("Controller", address, "DescribeTopics", {}, { timeoutMs: 5_000 })
      .then(
        () => undefined,
        (err: unknown) => err as grpc.ServiceError,
      );
    expect(fromGrpcError(e).errorName).toBe("NOT_CONTROLLER");
    expect(e?.metadata.get("tern-controller-leader-id")).toEqual(["2"]);
  });

  it("fails a call the server leaves unanswered at its deadline", async () => {
    const address = await controller();
    const started = performance.now();
    await expect(
      transport.unary("Controller", address, "Metadata", {}, { timeoutMs: 300 }),
    ).rejects.toMatchObject({ code: grpc.status.DEADLINE_EXCEEDED });
    expect(performance.now() - started).toBeLessThan(3_000);
  });

  it("delivers a server stream's messages, then its end once", async () => {
    const address = await controller();
    const versions: string[] = [];
    const ends: unknown[] = [];
    await new Promise<void>((resolve) => {
      transport.serverStream(
        "Controller",
        address,
        "WatchMetadata",
        { afterVersion: "0" },
        {
          onMessage: (m) => versions.push(String(m.metadata?.version)),
          onEnd: (e) => {
            ends.push(e);
            resolve();
          },
        },
      );
    });
    expect(versions).toEqual(["1", "2", "3"]);
    expect(ends).toEqual([undefined]);
  });

  it("reports a cancelled stream's end once, and a closed transport refuses calls", async () => {
    const address = await controller();
    const own = new GrpcServiceTransport();
    const ends: unknown[] = [];
    const ended = new Promise<void>((resolve) => {
      const cancel = own.serverStream(
        "Controller",
        address,
        "WatchMetadata",
        { afterVersion: "0" },
        {
          onMessage: () => cancel(),
          onEnd: (e) => {
            ends.push(e);
            resolve();
          },
        },
      );
    });
    await ended;
    expect(ends).toHaveLength(1);
    own.close();
    await expect(
      own.unary("Controller", address, "ListTopics", {}, { timeoutMs: 1_000 }),
    ).rejects.toThrow(/closed/);
  });
});

// Fetch answers framed in place: the frame header written in front of the body without a copy,
// any other answer framed by grpc-js as before, and a real gRPC round trip through the patch.
import * as grpc from "@grpc/grpc-js";
import { afterEach, describe, expect, it } from "vitest";
import { allocFramed, framedMessage, installFramedResponses } from "./framed-response.js";

const servers: grpc.Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.forceShutdown();
});

function echoService(answer: () => Buffer): grpc.ServiceDefinition {
  return {
    Get: {
      path: "/test.Framed/Get",
      requestStream: false,
      responseStream: false,
      requestSerialize: (v: Buffer) => v,
      requestDeserialize: (b: Buffer) => b,
      responseSerialize: () => answer(),
      responseDeserialize: (b: Buffer) => b,
    },
  };
}

async function roundTrip(answer: () => Buffer): Promise<Buffer> {
  const server = new grpc.Server();
  servers.push(server);
  const definition = echoService(answer);
  server.addService(definition, {
    Get: (_call: unknown, cb: grpc.sendUnaryData<Buffer>) => cb(null, Buffer.alloc(0)),
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) =>
      e ? reject(e) : resolve(p),
    ),
  );
  const Client = grpc.makeGenericClientConstructor(definition, "Framed");
  const client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  try {
    return await new Promise<Buffer>((resolve, reject) =>
      (
        client as unknown as { Get: (r: Buffer, cb: (e: Error | null, v: Buffer) => void) => void }
      ).Get(Buffer.alloc(0), (e, v) => (e ? reject(e) : resolve(v))),
    );
  } finally {
    client.close();
  }
}

describe("framed responses", () => {
  it("frames a body from allocFramed in place and leaves any other buffer alone", () => {
    const body = allocFramed(3);
    body.set([7, 8, 9]);
    const whole = framedMessage(body)!;
    expect([...whole]).toEqual([0, 0, 0, 0, 3, 7, 8, 9]);
    expect(whole.buffer).toBe(body.buffer);
    expect(framedMessage(Buffer.from([7, 8, 9]))).toBeUndefined();
  });

  it("is in effect with this grpc-js, and both kinds of answers arrive whole", async () => {
    expect(installFramedResponses()).toBe(true);
    const framed = async (): Promise<Buffer> =>
      roundTrip(() => {
        const b = allocFramed(70_000);
        for (let i = 0; i < b.length; i++) b[i] = i % 251;
        return b;
      });
    const received = await framed();
    expect(received.length).toBe(70_000);
    expect(received.every((v, i) => v === i % 251)).toBe(true);
    const plain = await roundTrip(() => Buffer.from("plain"));
    expect(plain.toString()).toBe("plain");
  });
});

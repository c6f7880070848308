// callEnd reads grpc-js's status details (it has no error code for either fact): pin what the
// pinned grpc-js says for a stream that reached a server which then went away, and for a connect
// that nothing listens to, against a real server on loopback.
import * as grpc from "@grpc/grpc-js";
import { afterEach, describe, expect, it } from "vitest";
import { callEnd } from "./transport.js";

const identity = (b: Buffer): Buffer => b;
const SERVICE: grpc.ServiceDefinition = {
  Stream: {
    path: "/test.CallEnd/Stream",
    requestStream: true,
    responseStream: false,
    requestSerialize: identity,
    requestDeserialize: identity,
    responseSerialize: identity,
    responseDeserialize: identity,
  },
};
const Client = grpc.makeGenericClientConstructor(SERVICE, "CallEnd");
/** The generic client's one method, as makeGenericClientConstructor builds it. */
interface StreamClient {
  Stream(callback: (err: grpc.ServiceError | null) => void): grpc.ClientWritableStream<Buffer>;
}

let client: grpc.Client | undefined;
afterEach(() => client?.close());

/** Opens a client stream, writes one frame, and answers the status it ends with. */
function streamEnd(c: grpc.Client): Promise<grpc.ServiceError | null> {
  return new Promise((resolve) => {
    const call = (c as unknown as StreamClient).Stream((err) => resolve(err));
    call.on("error", () => {});
    call.write(Buffer.from("x"));
  });
}

describe("callEnd", () => {
  it("tells a stream that reached its peer from a connect that was refused", async () => {
    const server = new grpc.Server();
    let received: () => void = () => {};
    const gotFrame = new Promise<void>((r) => (received = r));
    server.addService(SERVICE, {
      Stream: (call: grpc.ServerReadableStream<Buffer, Buffer>) =>
        call.on("data", () => received()),
    });
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) =>
        e ? reject(e) : resolve(p),
      ),
    );
    client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    const ended = streamEnd(client);
    await gotFrame;
    server.forceShutdown(); // the peer goes away under an open stream
    expect(callEnd(await ended)).toEqual({ connected: true, refused: false });
    // Nothing listens at that port now.
    expect(callEnd(await streamEnd(client))).toEqual({ connected: false, refused: true });
    expect(callEnd(null)).toEqual({ connected: true, refused: false });
  });
});

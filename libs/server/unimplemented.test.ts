import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadTernProto } from "../common/proto.js";
import { GRPC_SERVER_OPTIONS } from "../grpc/grpc-options.js";
import { unimplementedService } from "./unimplemented.js";

// Every method of a real tern service, unary and streaming, must answer UNIMPLEMENTED.
describe("unimplementedService", () => {
  const proto = loadTernProto();
  // The generated constructor type omits ServiceClientConstructor's static serviceName.
  const Controller = proto.grpc.tern.v1.Controller as unknown as grpc.ServiceClientConstructor;
  const server = new grpc.Server(GRPC_SERVER_OPTIONS);
  let client: grpc.Client & Record<string, (...args: unknown[]) => unknown>;

  beforeAll(async () => {
    server.addService(Controller.service, unimplementedService(Controller.service));
    const port = await new Promise<number>((r, j) =>
      server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) =>
        e ? j(e) : r(p),
      ),
    );
    client = new Controller(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as never;
  });
  afterAll(() => {
    client.close();
    server.forceShutdown();
  });

  it("answers UNIMPLEMENTED for every method", async () => {
    const methods = Object.entries(Controller.service);
    expect(methods.some(([, m]) => m.responseStream)).toBe(true);
    for (const [name, method] of methods) {
      const code = await new Promise<number>((resolveCode) => {
        const deadline = Date.now() + 3_000;
        if (!method.requestStream && !method.responseStream) {
          client[name]!({}, { deadline }, (err: grpc.ServiceError | null) =>
            resolveCode(err?.code ?? grpc.status.OK),
          );
        } else if (!method.requestStream) {
          const call = client[name]!({}, { deadline }) as grpc.ClientReadableStream<unknown>;
          call.on("data", () => {});
          call.on("error", (err: grpc.ServiceError) => resolveCode(err.code));
        } else {
          const call = (
            method.responseStream
              ? client[name]!({ deadline })
              : client[name]!({ deadline }, (err: grpc.ServiceError | null) =>
                  resolveCode(err?.code ?? grpc.status.OK),
                )
          ) as grpc.ClientWritableStream<unknown>;
          (call as unknown as NodeJS.EventEmitter).on("error", (err: grpc.ServiceError) =>
            resolveCode(err.code),
          );
          (call as unknown as NodeJS.EventEmitter).on("data", () => {});
          call.end();
        }
      });
      expect(code, name).toBe(grpc.status.UNIMPLEMENTED);
    }
  });
});

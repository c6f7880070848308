// The echo side of `npm run bench -- transport`, forked by transport.ts: serves one mechanism
// (raw TCP with a 4-byte length prefix, or gRPC with a bidi stream and a unary method, both
// passing bytes through unchanged) on a loopback port it reports, and reports its own CPU
// whenever the parent asks, so the parent can charge each side's CPU to the round trips.
import * as grpc from "@grpc/grpc-js";
import net from "node:net";
import { GRPC_SERVER_OPTIONS } from "../../libs/grpc/grpc-options.js";
import { ECHO_SERVICE, frameReader, type EchoMode } from "./_transport-wire.js";

const mode = process.argv[2] as EchoMode;
const send = (m: unknown): void => void process.send?.(m);
const cpu0 = process.cpuUsage();
process.on("message", (m) => {
  if (m !== "cpu") return;
  const c = process.cpuUsage(cpu0);
  send({ cpuUs: c.user + c.system });
});
process.on("disconnect", () => process.exit(0));

if (mode === "tcp") {
  const server = net.createServer((socket) => {
    socket.setNoDelay(true);
    // Echo whole frames only.
    socket.on(
      "data",
      frameReader((frame) => socket.write(frame)),
    );
    socket.on("error", () => socket.destroy());
  });
  server.listen(0, "127.0.0.1", () => send({ port: (server.address() as net.AddressInfo).port }));
} else {
  const server = new grpc.Server(GRPC_SERVER_OPTIONS);
  server.addService(ECHO_SERVICE, {
    Stream: (call: grpc.ServerDuplexStream<Buffer, Buffer>) => {
      call.on("data", (b: Buffer) => call.write(b));
      call.on("end", () => call.end());
      call.on("error", () => {});
    },
    Unary: (call: grpc.ServerUnaryCall<Buffer, Buffer>, done: grpc.sendUnaryData<Buffer>) =>
      done(null, call.request),
  });
  server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, port) =>
    err ? process.exit(1) : send({ port }),
  );
}

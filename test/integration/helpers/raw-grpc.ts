// Raw gRPC calls with credentials chosen per call (no process default involved): how the
// security tests play an anonymous caller, a user, or a process presenting another's certificate.
import { readFileSync } from "node:fs";
import * as grpc from "@grpc/grpc-js";
import { loadTernProto } from "../../../libs/common/proto.js";

const CALL_DEADLINE_MS = 10_000;

/** A raw client of one tern service. */
export function rawClient(
  service: "Controller" | "Broker" | "RaftTransport",
  address: string,
  credentials: grpc.ChannelCredentials,
): any {
  const v1 = loadTernProto().grpc.tern.v1 as any;
  return new (v1[service] as typeof grpc.Client)(address, credentials);
}

/** TLS with the cluster CA, and a client certificate when given. */
export function sslCredentials(
  caFile: string,
  identity?: { certFile: string; keyFile: string },
): grpc.ChannelCredentials {
  return grpc.credentials.createSsl(
    readFileSync(caFile),
    identity ? readFileSync(identity.keyFile) : null,
    identity ? readFileSync(identity.certFile) : null,
  );
}

export interface CallOutcome {
  readonly code: number;
  readonly details: string;
  readonly response?: any;
}

/** One unary call; resolves with its status (OK with the response, or the error's code). */
export function unary(client: any, method: string, request: unknown): Promise<CallOutcome> {
  return new Promise((resolve) => {
    client[method](
      request,
      { deadline: Date.now() + CALL_DEADLINE_MS },
      (err: grpc.ServiceError | null, res: unknown) =>
        resolve(
          err
            ? { code: err.code, details: err.details }
            : { code: grpc.status.OK, details: "", response: res },
        ),
    );
  });
}

/** One Raft Stream call carrying one batch (no messages): the code it ends with. */
export function raftStream(
  client: any,
  batch: { fromNodeId: number; toNodeId: number },
): Promise<CallOutcome> {
  return new Promise((resolve) => {
    const call = client.Stream(
      { deadline: Date.now() + CALL_DEADLINE_MS },
      (err: grpc.ServiceError | null) =>
        resolve(
          err ? { code: err.code, details: err.details } : { code: grpc.status.OK, details: "" },
        ),
    );
    call.on("error", () => undefined);
    call.write({ ...batch, messages: [] });
    call.end();
  });
}

/** The first view a WatchMetadata stream sends (then cancels it). */
export function firstWatchedView(client: any): Promise<CallOutcome> {
  return new Promise((resolve) => {
    const call = client.WatchMetadata(
      { afterVersion: "0" },
      { deadline: Date.now() + CALL_DEADLINE_MS },
    );
    let done = false;
    call.on("data", (m: unknown) => {
      if (done) return;
      done = true;
      resolve({ code: grpc.status.OK, details: "", response: m });
      call.cancel();
    });
    call.on("error", (err: grpc.ServiceError) => {
      if (done) return;
      done = true;
      resolve({ code: err.code, details: err.details });
    });
  });
}

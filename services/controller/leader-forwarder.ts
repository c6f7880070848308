// Forwards a request that reached a follower to the controller leader, so clients need not
// know who leads. A forwarded request carries FORWARDED_HEADER and is never forwarded again.
import * as grpc from "@grpc/grpc-js";
import type { PeerAddress } from "../../libs/common/config.js";
import { isTernError, TernError } from "../../libs/common/errors.js";
import { fromGrpcError } from "../../libs/common/grpc-errors.js";
import { controllerProto } from "../../libs/metadata/controller-proto.js";
import { FORWARDED_HEADER, notController } from "./controller-errors.js";
import { GrpcClientCache } from "../../libs/server/grpc-client-cache.js";

export class LeaderForwarder {
  /** By address, so a controller that moved gets a fresh channel. */
  private readonly clients = new GrpcClientCache();

  /** `controllers` answers the current quorum addresses (configuration plus membership changes). */
  constructor(private readonly controllers: () => readonly PeerAddress[], private readonly selfId: number) {}

  /** Calls `method` on controller leaderId; a transport failure becomes NOT_CONTROLLER naming it. */
  async forward(leaderId: number, method: string, request: unknown, timeoutMs: number): Promise<any> {
    const client = this.client(leaderId);
    if (!client) throw notController(leaderId, this.controllers(), "the leader's address is not known");
    const metadata = new grpc.Metadata();
    metadata.set(FORWARDED_HEADER, String(this.selfId));
    const fn = (client as any)[method] as Function | undefined;
    if (typeof fn !== "function") throw new TernError("INVALID_REQUEST", `unknown method ${method}`);
    try {
      return await new Promise((resolve, reject) => {
        fn.call(client, request, metadata, { deadline: Date.now() + timeoutMs }, (err: unknown, res: unknown) => (err ? reject(err) : resolve(res)));
      });
    } catch (e) {
      const error = fromGrpcError(e);
      if (isTernError(error, "NETWORK_EXCEPTION") || isTernError(error, "REQUEST_TIMED_OUT")) {
        throw notController(leaderId, this.controllers(), `forwarding failed: ${error.message}`);
      }
      throw error;
    }
  }

  private client(id: number): grpc.Client | undefined {
    const peer = this.controllers().find((p) => p.id === id);
    if (!peer) return undefined;
    return this.clients.get("Controller", controllerProto().client, `${peer.host}:${peer.port}`);
  }

  close(): void {
    this.clients.close();
  }
}

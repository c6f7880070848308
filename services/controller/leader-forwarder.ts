// Forwards a request that reached a follower to the controller leader, so clients need not
// know who leads. A forwarded request carries FORWARDED_HEADER and is never forwarded again.
import * as grpc from "@grpc/grpc-js";
import type { PeerAddress } from "../../libs/common/config.js";
import { isTernError, TernError } from "../../libs/common/errors.js";
import { fromGrpcError } from "../../libs/common/grpc-errors.js";
import { controllerProto } from "../../libs/metadata/controller-proto.js";
import { FORWARDED_HEADER, notController } from "./controller-errors.js";
import { GrpcClientCache } from "../../libs/grpc/grpc-client-cache.js";
import { grpcDeadline } from "../../libs/grpc/grpc-deadline.js";
import type { ControllerClient } from "../../libs/common/proto-types/index.js";
import {
  unaryCall,
  type RequestOf,
  type ResponseOf,
  type UnaryMethodName,
} from "../../libs/grpc/unary-call.js";
import { processCredentials } from "../../libs/server/tls/credentials.js";

export class LeaderForwarder {
  /** By address, so a controller that moved gets a fresh channel. */
  private readonly clients = new GrpcClientCache({ credentials: processCredentials() });

  /** `controllers` answers the current quorum addresses (configuration plus membership changes). */
  constructor(
    private readonly controllers: () => readonly PeerAddress[],
    private readonly selfId: number,
  ) {}

  /** Calls `method` on controller leaderId; a transport failure becomes NOT_CONTROLLER naming it. */
  async forward<M extends UnaryMethodName<ControllerClient>>(
    leaderId: number,
    method: M,
    request: RequestOf<ControllerClient, M>,
    timeoutMs: number,
  ): Promise<ResponseOf<ControllerClient, M>> {
    const client = this.client(leaderId);
    if (!client)
      throw notController(leaderId, this.controllers(), "the leader's address is not known");
    const metadata = new grpc.Metadata();
    metadata.set(FORWARDED_HEADER, String(this.selfId));
    if (typeof client[method] !== "function")
      throw new TernError("INVALID_REQUEST", `unknown method ${method}`);
    try {
      return await unaryCall(
        client,
        method,
        request,
        { deadline: grpcDeadline(timeoutMs) },
        metadata,
      );
    } catch (e) {
      const error = fromGrpcError(e);
      if (isTernError(error, "NETWORK_EXCEPTION") || isTernError(error, "REQUEST_TIMED_OUT")) {
        throw notController(leaderId, this.controllers(), `forwarding failed: ${error.message}`);
      }
      throw error;
    }
  }

  private client(id: number): ControllerClient | undefined {
    const peer = this.controllers().find((p) => p.id === id);
    if (!peer) return undefined;
    return this.clients.get<ControllerClient>(
      "Controller",
      controllerProto().client,
      `${peer.host}:${peer.port}`,
    );
  }

  close(): void {
    this.clients.close();
  }
}

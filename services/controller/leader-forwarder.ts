// Forwards a request that reached a follower to the controller leader, so clients need not
// know who leads. A forwarded request carries FORWARDED_HEADER and is never forwarded again.
import type { PeerAddress } from "../../libs/common/config.js";
import { isTernError } from "../../libs/common/errors.js";
import { fromGrpcError } from "../../libs/common/grpc-errors.js";
import type {
  MethodName,
  RequestOf,
  ResponseOf,
  ServiceTransport,
} from "../../libs/runtime/transport.js";
import { FORWARDED_HEADER, notController } from "./controller-errors.js";

export class LeaderForwarder {
  /** `controllers` answers the current quorum addresses (configuration plus membership changes). */
  constructor(
    private readonly transport: ServiceTransport,
    private readonly controllers: () => readonly PeerAddress[],
    private readonly selfId: number,
  ) {}

  /** Calls `method` on controller leaderId; a transport failure becomes NOT_CONTROLLER naming it. */
  async forward<M extends Exclude<MethodName<"Controller">, "WatchMetadata">>(
    leaderId: number,
    method: M,
    request: RequestOf<"Controller", M>,
    timeoutMs: number,
  ): Promise<ResponseOf<"Controller", M>> {
    const peer = this.controllers().find((p) => p.id === leaderId);
    if (!peer)
      throw notController(leaderId, this.controllers(), "the leader's address is not known");
    try {
      return await this.transport.unary(
        "Controller",
        `${peer.host}:${peer.port}`,
        method,
        request,
        {
          timeoutMs,
          headers: { [FORWARDED_HEADER]: String(this.selfId) },
        },
      );
    } catch (e) {
      const error = fromGrpcError(e);
      if (isTernError(error, "NETWORK_EXCEPTION") || isTernError(error, "REQUEST_TIMED_OUT")) {
        throw notController(leaderId, this.controllers(), `forwarding failed: ${error.message}`);
      }
      throw error;
    }
  }
}

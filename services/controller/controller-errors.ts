// NOT_CONTROLLER answers name the leader so a client can go straight there: the gRPC status
// carries the usual tern-error-* trailers plus tern-controller-leader-id / -address.
import type { ServiceError } from "@grpc/grpc-js";
import type { PeerAddress } from "../../libs/common/config.js";
import { TernError } from "../../libs/common/errors.js";
import { toGrpcError } from "../../libs/common/grpc-errors.js";

export const LEADER_ID_TRAILER = "tern-controller-leader-id";
export const LEADER_ADDRESS_TRAILER = "tern-controller-leader-address";
/** Set on a request a controller forwards to the leader, so it is never forwarded twice. */
export const FORWARDED_HEADER = "tern-forwarded";

export function notController(
  leaderId: number,
  controllers: readonly PeerAddress[],
  why: string,
): TernError {
  const peer = controllers.find((c) => c.id === leaderId);
  const leaderAddress = peer ? `${peer.host}:${peer.port}` : "";
  const where =
    leaderId >= 0
      ? `the leader is controller ${leaderId}${leaderAddress ? ` at ${leaderAddress}` : ""}`
      : "no leader is known yet";
  return new TernError("NOT_CONTROLLER", `this controller is not the leader (${why}); ${where}`, {
    leaderId,
    leaderAddress,
  });
}

/** toGrpcError plus the leader trailers for NOT_CONTROLLER. */
export function toControllerGrpcError(e: TernError): ServiceError {
  const err = toGrpcError(e);
  if (e.errorName === "NOT_CONTROLLER" && typeof e.details.leaderId === "number") {
    err.metadata.set(LEADER_ID_TRAILER, String(e.details.leaderId));
    if (typeof e.details.leaderAddress === "string" && e.details.leaderAddress !== "") {
      err.metadata.set(LEADER_ADDRESS_TRAILER, e.details.leaderAddress);
    }
  }
  return err;
}

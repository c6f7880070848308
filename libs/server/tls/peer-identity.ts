// A peer is who it says it is: a tern process's certificate names its role (tern:role:<role>)
// and, when issued per process, its node id (tern:node:<id>, principal.ts). The peer-method
// table (peer-authorization.ts) decides which roles may call a method; this interceptor checks
// that what a peer says about itself in the request matches its certificate, so broker 1's
// certificate cannot register, heartbeat, report leaders or send Raft frames as node 2, and a
// broker's certificate cannot send Raft frames to controllers (each Raft group is one role's).
// A refusal is PERMISSION_DENIED before the handler sees the request (or the frame).
// Controllers are exempt on the controller's node RPCs: a follower forwards its peers' calls to
// the leader under its own certificate, after its own interceptor checked them.
import * as grpc from "@grpc/grpc-js";
import type { Role } from "../../common/config.js";
import type { Logger } from "../../common/logger.js";
import { principalOfCall } from "./peer-authorization.js";
import { describePrincipal, type Principal } from "./principal.js";

type Peer = Extract<Principal, { kind: "peer" }>;
type Claim = Readonly<Record<string, unknown>>;

/** What a request of each method says about its sender: the node id and, where sent, the role. */
interface IdentityRule {
  /** The sender's node id in the message (undefined: the message does not name one). */
  readonly nodeId: (m: Claim) => unknown;
  readonly role?: (m: Claim) => Role | undefined;
  /** Raft: the sender must be a process of the receiving process's role. */
  readonly sameRole?: boolean;
  /** Controller node RPCs: controllers forward them for others. */
  readonly controllersForward?: boolean;
}

const wireRole = (value: unknown): Role | undefined =>
  value === "BROKER" || value === 1
    ? "broker"
    : value === "COORDINATOR" || value === 2
      ? "coordinator"
      : undefined;

const RULES: ReadonlyMap<string, IdentityRule> = new Map<string, IdentityRule>([
  ["/tern.v1.RaftTransport/Stream", { nodeId: (m) => m.fromNodeId, sameRole: true }],
  ["/tern.v1.RaftTransport/InstallSnapshot", { nodeId: (m) => m.fromNodeId, sameRole: true }],
  [
    "/tern.v1.Controller/RegisterNode",
    { nodeId: (m) => m.nodeId, role: (m) => wireRole(m.role), controllersForward: true },
  ],
  [
    "/tern.v1.Controller/Heartbeat",
    { nodeId: (m) => m.nodeId, role: (m) => wireRole(m.role), controllersForward: true },
  ],
  ["/tern.v1.Controller/ReportLeaders", { nodeId: (m) => m.nodeId, controllersForward: true }],
  [
    "/tern.v1.Controller/AllocateProducerIds",
    { nodeId: (m) => m.nodeId, controllersForward: true },
  ],
  ["/tern.v1.Controller/RecordControllerDirectory", { nodeId: (m) => m.nodeId }],
]);

/** Pure: why this peer may not send this message (undefined: it may). */
export function identityRefusal(
  path: string,
  peer: Peer,
  ownRole: Role,
  message: Claim,
): string | undefined {
  const rule = RULES.get(path);
  if (rule === undefined) return undefined;
  if (rule.controllersForward && peer.role === "controller") return undefined;
  if (rule.sameRole && peer.role !== ownRole)
    return `${path}: this ${ownRole}'s Raft groups are among ${ownRole}s; ${describePrincipal(peer)} may not send to them`;
  const claimedRole = rule.role?.(message);
  if (rule.role !== undefined && claimedRole !== peer.role)
    return `${path}: ${describePrincipal(peer)} may not act as a ${claimedRole ?? "process of another role"}`;
  if (peer.nodeId === undefined) return undefined;
  const claimed = Number(rule.nodeId(message));
  if (claimed !== peer.nodeId)
    return `${path}: ${describePrincipal(peer)} is bound to node ${peer.nodeId} by its certificate and may not act as node ${Number.isFinite(claimed) ? claimed : "?"}`;
  return undefined;
}

/** Refusals are logged at most this often per method. */
const REFUSAL_LOG_INTERVAL_MS = 5_000;

export function peerIdentityInterceptor(ownRole: Role, logger: Logger): grpc.ServerInterceptor {
  const lastLogged = new Map<string, number>();
  return (method, call) => {
    if (!RULES.has(method.path)) return new grpc.ServerInterceptingCall(call);
    const principal = principalOfCall(call);
    // Anonymous and user callers never get here for these methods (the peer table refused them).
    if (principal.kind !== "peer") return new grpc.ServerInterceptingCall(call);
    let refused = false;
    return new grpc.ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMessage: (message, passOn) => {
            if (refused) return;
            const reason = identityRefusal(method.path, principal, ownRole, message as Claim);
            if (reason === undefined) return passOn(message);
            refused = true;
            const now = Date.now();
            if ((lastLogged.get(method.path) ?? 0) + REFUSAL_LOG_INTERVAL_MS <= now) {
              lastLogged.set(method.path, now);
              logger.warn({ method: method.path, reason }, "peer identity refused");
            }
            call.sendStatus({
              code: grpc.status.PERMISSION_DENIED,
              details: reason,
              metadata: new grpc.Metadata(),
            });
          },
          onReceiveHalfClose: (passOn) => {
            if (!refused) passOn();
          },
        }),
    });
  };
}

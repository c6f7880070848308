// The server interceptor that enforces PEER_METHODS on a TLS listener: a call without a
// verified cluster-CA certificate gets UNAUTHENTICATED, one whose certificate has no allowed
// role gets PERMISSION_DENIED, before the handler sees a byte of the request. Installed only
// when TLS is on (plaintext is the development mode and has no identities to check).
import * as grpc from "@grpc/grpc-js";
import type { Logger } from "../../common/logger.js";
import { PEER_METHODS } from "./peer-methods.js";
import { describePrincipal, principalOfCertificate, type Principal } from "./principal.js";

export interface PeerDecision {
  readonly allowed: boolean;
  readonly code?: grpc.status;
  readonly details?: string;
}

/** Pure: what the table says for this method and principal. */
export function decidePeerCall(path: string, principal: Principal): PeerDecision {
  const roles = PEER_METHODS.get(path);
  if (roles === undefined) return { allowed: true };
  if (principal.kind === "anonymous") {
    return {
      allowed: false,
      code: grpc.status.UNAUTHENTICATED,
      details: `${path} needs a client certificate of the cluster CA with a peer role (${roles.join(", ")}); none was presented or it is not signed by the cluster CA`,
    };
  }
  if (principal.kind === "peer" && roles.includes(principal.role)) return { allowed: true };
  return {
    allowed: false,
    code: grpc.status.PERMISSION_DENIED,
    details: `${path} is for tern ${roles.join("/")} processes; ${describePrincipal(principal)} may not call it`,
  };
}

/** The principal of a server call (the ACL seam: handlers can ask the same question). */
export function principalOfCall(call: {
  getAuthContext?: () => { sslPeerCertificate?: import("node:tls").PeerCertificate } | null;
}): Principal {
  return principalOfCertificate(call.getAuthContext?.()?.sslPeerCertificate ?? undefined);
}

/** Refusals are logged at most this often per method, so a misconfigured peer cannot flood the log. */
const REFUSAL_LOG_INTERVAL_MS = 5_000;

export function peerAuthorizationInterceptor(logger: Logger): grpc.ServerInterceptor {
  const lastLogged = new Map<string, number>();
  return (method, call) => {
    // grpc-js wants a ServerInterceptingCall back; one without a responder passes everything through.
    if (!PEER_METHODS.has(method.path)) return new grpc.ServerInterceptingCall(call);
    const principal = principalOfCall(call);
    const decision = decidePeerCall(method.path, principal);
    if (decision.allowed) return new grpc.ServerInterceptingCall(call);
    const now = Date.now();
    if ((lastLogged.get(method.path) ?? 0) + REFUSAL_LOG_INTERVAL_MS <= now) {
      lastLogged.set(method.path, now);
      logger.warn(
        { method: method.path, principal: describePrincipal(principal), code: decision.code },
        "peer RPC refused",
      );
    }
    return new grpc.ServerInterceptingCall(call, {
      start: (next) => {
        next({
          onReceiveMetadata: () =>
            call.sendStatus({
              code: decision.code!,
              details: decision.details!,
              metadata: new grpc.Metadata(),
            }),
          onReceiveMessage: () => undefined,
          onReceiveHalfClose: () => undefined,
        });
      },
    });
  };
}

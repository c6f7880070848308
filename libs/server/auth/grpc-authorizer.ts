// The one authorization seam of the gRPC API: a server interceptor every call goes through
// (installed with TLS, next to the peer-method table of tls/peer-authorization.ts).
//  1. Who: a peer certificate with a tern role is a tern process and passes (the peer table
//     has already decided); `authorization: Basic ...` in the call metadata is a SCRAM user
//     (password-verifier.ts; it wins over a user certificate, as SASL does over SSL in Kafka);
//     else a verified user certificate is User:<CN>. Bad credentials: UNAUTHENTICATED
//     (SASL_AUTHENTICATION_FAILED), before the handler sees the request.
//  2. With `--grpc-authorizer acl`: a call without credentials is UNAUTHENTICATED too, and the
//     request is checked against the ACLs of the metadata view (grpc-acl-rules.ts): refused as
//     a whole (PERMISSION_DENIED with the *_AUTHORIZATION_FAILED trailers, libs/common/
//     grpc-errors.ts), per partition (TOPIC_AUTHORIZATION_FAILED in place; the handler sees the
//     allowed partitions only), or a listing filtered. Each call reads the current view, so an
//     ACL change applies to the next call (an open consumer is cut off at its next Fetch).
//  3. Admin operations (admin-methods.ts) when some listener of the process requires
//     authentication (`adminGuard`): checked against the ACLs even without the authorizer,
//     never served to an anonymous caller, and a broker or coordinator forwarding one for a
//     Kafka client is checked as that client's principal (ON_BEHALF_OF_HEADER), not as itself.
// Without the authorizer any other call without credentials is allowed (TLS only).
import * as grpc from "@grpc/grpc-js";
import { aclAuthorizer, clientHostOf } from "../../common/acl.js";
import { requestAccess } from "../../common/acl-access.js";
import { TernError } from "../../common/errors.js";
import { toGrpcError } from "../../common/grpc-errors.js";
import type { Logger } from "../../common/logger.js";
import { principalOfCall } from "../tls/peer-authorization.js";
import { ADMIN_METHODS, ANONYMOUS_KAFKA_PRINCIPAL, ON_BEHALF_OF_HEADER } from "./admin-methods.js";
import { isOpenMethod, ruleOf, type Message, type RuleContext } from "./grpc-acl-rules.js";
import {
  AUTHORIZATION_HEADER,
  parseBasicAuthorization,
  PasswordVerifier,
} from "./password-verifier.js";
import type { SecurityView } from "./security-view.js";

export interface GrpcAuthorizerOptions {
  readonly logger: Logger;
  /** `--grpc-authorizer acl`; undefined: authenticate sent credentials, allow everything. */
  readonly authorizer: { readonly superUsers: readonly string[] } | undefined;
  /**
   * Set when some listener of the process requires authentication: admin operations are then
   * authenticated and checked against the ACLs (with these super-users) even without `authorizer`.
   */
  readonly adminGuard?: { readonly superUsers: readonly string[] } | undefined;
  /** The role's view of the metadata (undefined until compose() provides it). */
  readonly view: () => SecurityView | undefined;
}

/** Refusals are logged at most this often per method and kind, so a misbehaving client cannot flood the log. */
const REFUSAL_LOG_INTERVAL_MS = 5_000;

type Outcome = { readonly principal: string | undefined } | { readonly refused: TernError };

export function grpcAuthorizerInterceptor(options: GrpcAuthorizerOptions): grpc.ServerInterceptor {
  const verifier = new PasswordVerifier(() => options.view()?.scramCredentials() ?? []);
  const acls = (): ReturnType<SecurityView["acls"]> => options.view()?.acls() ?? [];
  const authorizer = aclAuthorizer(acls, new Set(options.authorizer?.superUsers ?? []));
  const adminAuthorizer = aclAuthorizer(acls, new Set(options.adminGuard?.superUsers ?? []));
  /** The ACLs that decide a call of this method, or undefined when nothing is checked. */
  const policyOf = (path: string): typeof authorizer | undefined =>
    options.authorizer !== undefined
      ? authorizer
      : options.adminGuard !== undefined && ADMIN_METHODS.has(path)
        ? adminAuthorizer
        : undefined;
  const lastLogged = new Map<string, number>();
  const logRefusal = (path: string, principal: string | undefined, e: TernError): void => {
    const key = `${path} ${e.errorName}`;
    const now = Date.now();
    if ((lastLogged.get(key) ?? 0) + REFUSAL_LOG_INTERVAL_MS > now) return;
    if (lastLogged.size >= 1_000) lastLogged.clear();
    lastLogged.set(key, now);
    options.logger.warn(
      { method: path, principal, code: e.errorName, reason: e.message },
      "gRPC call refused",
    );
  };

  /** Who a call without a password is (no await: the common case stays synchronous); `principal: undefined` is an anonymous caller the configuration lets through. */
  const withoutPassword = (certificateUser: string | undefined, path: string): Outcome => {
    if (certificateUser !== undefined) return { principal: `User:${certificateUser}` };
    if (policyOf(path) === undefined) return { principal: undefined };
    return {
      refused: new TernError(
        "SASL_AUTHENTICATION_FAILED",
        "this cluster's gRPC API needs credentials: a client certificate of the cluster CA, or a username and password (the client's credentials option; tern --username with TERN_PASSWORD)",
      ),
    };
  };

  /** Who a call with an authorization header is (step 1 above): a verified SCRAM user, or refused. */
  const authenticate = async (header: unknown): Promise<Outcome> => {
    const parsed = parseBasicAuthorization(String(header));
    if (typeof parsed === "string")
      return { refused: new TernError("SASL_AUTHENTICATION_FAILED", parsed) };
    if (!options.view()?.loaded()) return { refused: notLoaded() };
    const verdict = await verifier.verify(parsed.user, parsed.password);
    if (verdict === "busy")
      return {
        refused: new TernError(
          "THROTTLING_QUOTA_EXCEEDED",
          "too many password verifications in flight; retry",
        ),
      };
    if (verdict === "bad")
      return {
        refused: new TernError(
          "SASL_AUTHENTICATION_FAILED",
          `authentication failed for user "${parsed.user}": unknown user or wrong password`,
        ),
      };
    return { principal: `User:${parsed.user}` };
  };

  /** Whom a broker or coordinator forwards an admin request for: its Kafka client, never anonymous. */
  const onBehalfOf = (header: unknown): Outcome => {
    const principal = typeof header === "string" ? header : "";
    if (/^User:.+$/.test(principal) && principal !== ANONYMOUS_KAFKA_PRINCIPAL)
      return { principal };
    return {
      refused: new TernError(
        "SASL_AUTHENTICATION_FAILED",
        `admin operations need an authenticated principal; the Kafka client this was forwarded for is ${principal === "" ? "not named" : principal}`,
      ),
    };
  };

  return (method, call) => {
    if (isOpenMethod(method.path)) return new grpc.ServerInterceptingCall(call);
    const certificate = principalOfCall(call);
    const policy = policyOf(method.path);
    // A broker or coordinator asking for an admin operation does so for a Kafka client.
    const forwarded =
      certificate.kind === "peer" &&
      certificate.role !== "controller" &&
      ADMIN_METHODS.has(method.path) &&
      policy !== undefined;
    // Tern processes: the peer-method table decides; no ACL ever refuses them.
    if (certificate.kind === "peer" && !forwarded) return new grpc.ServerInterceptingCall(call);
    let principal: string | undefined;
    let refused = false;
    // grpc-js hands the request to this listener while the metadata is still being checked:
    // the message waits for the authentication's outcome.
    let authenticated: boolean | Promise<boolean> = false;
    let answer: ((response: Message) => Message) | undefined;
    const refuse = (e: TernError): void => {
      if (refused) return;
      refused = true;
      logRefusal(method.path, principal, e);
      const status = toGrpcError(e);
      call.sendStatus({ code: status.code, details: status.details, metadata: status.metadata });
    };
    const decide = (message: Message, passOn: (m: Message) => void): void => {
      if (policy === undefined || principal === undefined) return passOn(message);
      const view = options.view();
      if (!view?.loaded()) return refuse(notLoaded());
      const ctx: RuleContext = {
        access: requestAccess(policy, principal, peerHost(call.getPeer())),
        topicNames: () => view.topicNames(),
      };
      const decided = authorize(method.path, message, ctx);
      if ("refused" in decided) return refuse(decided.refused);
      answer = decided.answer;
      passOn(decided.request);
    };
    return new grpc.ServerInterceptingCall(call, {
      start: (next) =>
        next({
          onReceiveMetadata: (metadata, passOn) => {
            const accept = (outcome: Outcome): boolean => {
              if ("refused" in outcome) {
                refuse(outcome.refused);
                return false;
              }
              principal = outcome.principal;
              // The password stops here: handlers, logs and forwarded calls never see it.
              metadata.remove(AUTHORIZATION_HEADER);
              passOn(metadata);
              return true;
            };
            if (forwarded) {
              authenticated = accept(onBehalfOf(metadata.get(ON_BEHALF_OF_HEADER)[0]));
              return;
            }
            const header = metadata.get(AUTHORIZATION_HEADER)[0];
            if (header === undefined) {
              authenticated = accept(
                withoutPassword(
                  certificate.kind === "user" ? certificate.name : undefined,
                  method.path,
                ),
              );
              return;
            }
            authenticated = authenticate(header).then(accept, (e: unknown) => {
              refuse(
                new TernError(
                  "UNKNOWN_SERVER_ERROR",
                  `authentication failed: ${(e as Error).message}`,
                ),
              );
              return false;
            });
          },
          onReceiveMessage: (message, passOn) => {
            if (authenticated === true) return decide(message, passOn);
            if (authenticated === false) return;
            void authenticated.then((ok) => {
              if (ok && !refused) decide(message, passOn);
            });
          },
          onReceiveHalfClose: (passOn) => {
            if (!refused) passOn();
          },
        }),
      sendMessage: (message, passOn) => passOn(answer ? answer(message) : message),
    });
  };
}

type Decision =
  | { readonly refused: TernError }
  | { readonly request: Message; readonly answer: ((response: Message) => Message) | undefined };

/** Pure: what the rule says for this request (exported for the unit test). */
export function authorize(path: string, request: Message, ctx: RuleContext): Decision {
  const rule = ruleOf(path);
  const refusal = rule.check?.(request, ctx);
  if (refusal) return { refused: refusal };
  if (rule.perPartition !== undefined) return splitPartitions(request, rule.perPartition, ctx);
  const filter = rule.filter;
  return {
    request: rule.rewrite ? rule.rewrite(request, ctx) : request,
    answer: filter ? (response) => filter(response, ctx) : undefined,
  };
}

/**
 * The handler gets the allowed partitions only; the answer gets TOPIC_AUTHORIZATION_FAILED for
 * each refused one, in request order (clients match answers to requests by position). When
 * none is allowed a Fetch does not wait (max_wait_ms 0), as in Kafka.
 */
function splitPartitions(
  request: Message,
  op: import("../../common/acl.js").Operation,
  ctx: RuleContext,
): Decision {
  const items: Message[] = Array.isArray(request?.partitions) ? request.partitions : [];
  const ok = items.map((p) => ctx.access.allowed(op, "topic", String(p?.topic ?? "")));
  if (ok.every(Boolean)) return { request, answer: undefined };
  const allowed = items.filter((_, i) => ok[i]);
  const forwarded = {
    ...request,
    partitions: allowed,
    ...(allowed.length === 0 ? { maxWaitMs: 0 } : {}),
  };
  const refusedItem = (p: Message): Message => ({
    topic: p.topic,
    partition: p.partition,
    errorCode: "TOPIC_AUTHORIZATION_FAILED",
    errorMessage: `${ctx.access.principal} may not ${op} topic "${p.topic}"`,
    ...(op === "read" ? { batches: [] } : {}),
  });
  const answer = (response: Message): Message => {
    const answers: Message[] = Array.isArray(response?.partitions) ? response.partitions : [];
    let next = 0;
    const merged = items
      .map((p, i) => (ok[i] ? answers[next++] : refusedItem(p)))
      .filter((x) => x !== undefined);
    return { ...response, partitions: [...merged, ...answers.slice(next)] };
  };
  return { request: forwarded, answer };
}

/** The client's IP address from grpc-js's peer text ("<address>:<port>", IPv6 unbracketed). */
export function peerHost(peer: string): string {
  const colon = peer.lastIndexOf(":");
  return clientHostOf(colon > 0 ? peer.slice(0, colon) : peer);
}

function notLoaded(): TernError {
  return new TernError(
    "BROKER_NOT_AVAILABLE",
    "this node has no metadata view yet to check credentials and ACLs against; retry",
  );
}

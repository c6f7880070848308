// Who is calling: the authentication seam every RPC goes through. A peer certificate of the
// cluster CA with a SAN URI tern:role:<role> is a tern process of that role; a verified
// certificate without one is a user (its CN; SCRAM users will land here too); no verified
// certificate is anonymous. Authorization (the peer-method table today, ACLs later) decides on
// this value only.
import type { PeerCertificate } from "node:tls";
import type { X509Certificate } from "node:crypto";
import type { Role } from "../../common/config.js";

export type Principal =
  | {
      readonly kind: "peer";
      readonly role: Role;
      readonly name: string;
      /** The node id the certificate is bound to (SAN URI tern:node:<id>); undefined: any node of its role. */
      readonly nodeId?: number;
    }
  | { readonly kind: "user"; readonly name: string }
  | { readonly kind: "anonymous" };

export const ANONYMOUS: Principal = { kind: "anonymous" };
export const ROLE_URI_PREFIX = "tern:role:";
/** A process certificate's node id: SAN URI tern:node:<id> (the local cluster's certificates carry it). */
export const NODE_URI_PREFIX = "tern:node:";
const ROLES: readonly Role[] = ["controller", "broker", "coordinator"];

/** The roles named by a subjectAltName string ("URI:tern:role:broker, DNS:localhost, ..."). */
export function rolesOfSubjectAltName(san: string | undefined): Role[] {
  if (!san) return [];
  return san.split(/,\s*/).flatMap((entry) => {
    if (!entry.startsWith(`URI:${ROLE_URI_PREFIX}`)) return [];
    const role = entry.slice(`URI:${ROLE_URI_PREFIX}`.length) as Role;
    return ROLES.includes(role) ? [role] : [];
  });
}

/**
 * The node ids named by a subjectAltName string ("URI:tern:node:2, ..."); a malformed one counts
 * as a node id that matches none (NaN), so a typo cannot widen a certificate to every node.
 */
export function nodeIdsOfSubjectAltName(san: string | undefined): number[] {
  if (!san) return [];
  return san.split(/,\s*/).flatMap((entry) => {
    if (!entry.startsWith(`URI:${NODE_URI_PREFIX}`)) return [];
    const text = entry.slice(`URI:${NODE_URI_PREFIX}`.length);
    return [/^\d{1,7}$/.test(text) ? Number(text) : NaN];
  });
}

/**
 * The principal of a verified peer certificate (grpc-js gives it only when it chains to the
 * server's CA: `call.getAuthContext().sslPeerCertificate`); undefined means none was verified.
 */
export function principalOfCertificate(cert: PeerCertificate | undefined): Principal {
  if (cert === undefined) return ANONYMOUS;
  const cn = commonName(cert.subject?.CN);
  const roles = rolesOfSubjectAltName(cert.subjectaltname);
  const nodeIds = nodeIdsOfSubjectAltName(cert.subjectaltname);
  // Two roles or two node ids in one certificate is ambiguous: treat it as no peer at all.
  if (roles.length === 1 && nodeIds.length <= 1)
    return nodeIds.length === 1
      ? { kind: "peer", role: roles[0]!, name: cn, nodeId: nodeIds[0]! }
      : { kind: "peer", role: roles[0]!, name: cn };
  return { kind: "user", name: cn };
}

/** The role of our own certificate (start-up check that a broker was not given a controller's). */
export function rolesOfCertificate(cert: X509Certificate): Role[] {
  return rolesOfSubjectAltName(cert.subjectAltName);
}

/** The node ids our own certificate is bound to (start-up and reload check against --node-id). */
export function nodeIdsOfCertificate(cert: X509Certificate): number[] {
  return nodeIdsOfSubjectAltName(cert.subjectAltName);
}

export function describePrincipal(p: Principal): string {
  return p.kind === "peer"
    ? `peer ${p.role}${p.nodeId !== undefined ? ` ${p.nodeId}` : ""} "${p.name}"`
    : p.kind === "user"
      ? `user "${p.name}"`
      : "an anonymous caller";
}

function commonName(cn: string | string[] | undefined): string {
  return Array.isArray(cn) ? (cn[0] ?? "") : (cn ?? "");
}

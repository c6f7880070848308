// Who is calling: the authentication seam every RPC goes through. A peer certificate of the
// cluster CA with a SAN URI tern:role:<role> is a tern process of that role; a verified
// certificate without one is a user (its CN; SCRAM users will land here too); no verified
// certificate is anonymous. Authorization (the peer-method table today, ACLs later) decides on
// this value only.
import type { PeerCertificate } from "node:tls";
import type { X509Certificate } from "node:crypto";
import type { Role } from "../../common/config.js";

export type Principal =
  | { readonly kind: "peer"; readonly role: Role; readonly name: string }
  | { readonly kind: "user"; readonly name: string }
  | { readonly kind: "anonymous" };

export const ANONYMOUS: Principal = { kind: "anonymous" };
export const ROLE_URI_PREFIX = "tern:role:";
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
 * The principal of a verified peer certificate (grpc-js gives it only when it chains to the
 * server's CA: `call.getAuthContext().sslPeerCertificate`); undefined means none was verified.
 */
export function principalOfCertificate(cert: PeerCertificate | undefined): Principal {
  if (cert === undefined) return ANONYMOUS;
  const cn = commonName(cert.subject?.CN);
  const roles = rolesOfSubjectAltName(cert.subjectaltname);
  if (roles.length === 1) return { kind: "peer", role: roles[0]!, name: cn };
  // Two roles in one certificate is ambiguous: treat it as no peer at all.
  return { kind: "user", name: cn };
}

/** The role of our own certificate (start-up check that a broker was not given a controller's). */
export function rolesOfCertificate(cert: X509Certificate): Role[] {
  return rolesOfSubjectAltName(cert.subjectAltName);
}

export function describePrincipal(p: Principal): string {
  return p.kind === "peer"
    ? `peer ${p.role} "${p.name}"`
    : p.kind === "user"
      ? `user "${p.name}"`
      : "an anonymous caller";
}

function commonName(cn: string | string[] | undefined): string {
  return Array.isArray(cn) ? (cn[0] ?? "") : (cn ?? "");
}

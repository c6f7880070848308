// Call metadata that both ends of a tern gRPC call agree on: the client sets these, the
// server's authenticator and authorizer (libs/server/auth) read them.

/** Carries a client's username and password (HTTP Basic), over TLS only. */
export const AUTHORIZATION_HEADER = "authorization";

/**
 * Call metadata a broker or coordinator sets when it forwards a Kafka client's admin request:
 * the principal its Kafka listener authenticated (`User:<name>`, or `User:ANONYMOUS`).
 */
export const ON_BEHALF_OF_HEADER = "tern-on-behalf-of";

/** The header value a client sends. */
export function basicAuthorizationValue(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`, "utf8").toString("base64")}`;
}

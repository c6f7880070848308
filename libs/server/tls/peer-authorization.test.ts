// The peer-method table's decisions and the principal read from a certificate's SAN, without
// sockets (the real-process checks are in test/integration/tls.test.ts).
import * as grpc from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { decidePeerCall } from "./peer-authorization.js";
import { ANONYMOUS, principalOfCertificate, rolesOfSubjectAltName } from "./principal.js";

describe("principal", () => {
  it("a SAN URI tern:role:<role> makes a peer; none, an unknown or two roles make a user", () => {
    expect(
      rolesOfSubjectAltName("URI:tern:role:broker, DNS:localhost, IP Address:127.0.0.1"),
    ).toEqual(["broker"]);
    expect(rolesOfSubjectAltName("URI:tern:role:admin, DNS:localhost")).toEqual([]);
    const cert = (san: string) => ({ subject: { CN: "x" }, subjectaltname: san }) as never;
    expect(principalOfCertificate(cert("URI:tern:role:coordinator"))).toEqual({
      kind: "peer",
      role: "coordinator",
      name: "x",
    });
    expect(principalOfCertificate(cert("DNS:localhost"))).toEqual({ kind: "user", name: "x" });
    expect(principalOfCertificate(cert("URI:tern:role:broker, URI:tern:role:controller"))).toEqual({
      kind: "user",
      name: "x",
    });
    expect(principalOfCertificate(undefined)).toBe(ANONYMOUS);
  });
});

describe("decidePeerCall", () => {
  const peer = (role: "controller" | "broker" | "coordinator") => ({
    kind: "peer" as const,
    role,
    name: role,
  });
  it("open methods are open to anyone; peer methods need a verified certificate with an allowed role", () => {
    expect(decidePeerCall("/tern.v1.Broker/Produce", ANONYMOUS).allowed).toBe(true);
    expect(decidePeerCall("/tern.v1.RaftTransport/Stream", ANONYMOUS).code).toBe(
      grpc.status.UNAUTHENTICATED,
    );
    expect(
      decidePeerCall("/tern.v1.RaftTransport/Stream", { kind: "user", name: "alice" }).code,
    ).toBe(grpc.status.PERMISSION_DENIED);
    for (const role of ["controller", "broker", "coordinator"] as const)
      expect(decidePeerCall("/tern.v1.RaftTransport/Stream", peer(role)).allowed).toBe(true);
    expect(decidePeerCall("/tern.v1.Broker/WriteTxnMarkers", peer("coordinator")).allowed).toBe(
      true,
    );
    expect(decidePeerCall("/tern.v1.Broker/WriteTxnMarkers", peer("broker")).code).toBe(
      grpc.status.PERMISSION_DENIED,
    );
    expect(
      decidePeerCall("/tern.v1.Controller/RecordControllerDirectory", peer("broker")).allowed,
    ).toBe(false);
    expect(decidePeerCall("/tern.v1.Controller/RegisterNode", peer("broker")).allowed).toBe(true);
  });
});

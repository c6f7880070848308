// What a peer may say about itself (peer-identity.ts) and how a certificate names its node id
// (principal.ts), without sockets; the real-process checks are in
// test/integration/security-posture.test.ts.
import { describe, expect, it } from "vitest";
import { identityRefusal } from "./peer-identity.js";
import { nodeIdsOfSubjectAltName, principalOfCertificate } from "./principal.js";

const broker1 = { kind: "peer", role: "broker", name: "tern-broker-1", nodeId: 1 } as const;
const anyBroker = { kind: "peer", role: "broker", name: "tern-broker" } as const;
const controller0 = { kind: "peer", role: "controller", name: "c", nodeId: 0 } as const;

describe("node id in a certificate", () => {
  it("tern:node:<id> binds a peer; two, or a malformed one, bind it to nothing that matches", () => {
    const cert = (san: string) => ({ subject: { CN: "x" }, subjectaltname: san }) as never;
    expect(principalOfCertificate(cert("URI:tern:role:broker, URI:tern:node:3"))).toEqual({
      kind: "peer",
      role: "broker",
      name: "x",
      nodeId: 3,
    });
    expect(
      principalOfCertificate(cert("URI:tern:role:broker, URI:tern:node:3, URI:tern:node:4")),
    ).toEqual({ kind: "user", name: "x" });
    expect(nodeIdsOfSubjectAltName("URI:tern:node:x1")).toEqual([NaN]);
  });
});

describe("identityRefusal", () => {
  it("node RPCs must name the certificate's node id and role", () => {
    const path = "/tern.v1.Controller/ReportLeaders";
    expect(identityRefusal(path, broker1, "controller", { nodeId: 1 })).toBeUndefined();
    expect(identityRefusal(path, broker1, "controller", { nodeId: 2 })).toMatch(
      /bound to node 1 .* may not act as node 2/,
    );
    const register = "/tern.v1.Controller/RegisterNode";
    expect(
      identityRefusal(register, broker1, "controller", { nodeId: 1, role: "COORDINATOR" }),
    ).toMatch(/may not act as a coordinator/);
    expect(
      identityRefusal(register, broker1, "controller", { nodeId: 1, role: "BROKER" }),
    ).toBeUndefined();
    // A role-wide certificate (no tern:node:) may be any node of its role, not another role.
    expect(
      identityRefusal(register, anyBroker, "controller", { nodeId: 5, role: "BROKER" }),
    ).toBeUndefined();
    // Controllers forward these for the node that sent them.
    expect(identityRefusal(path, controller0, "controller", { nodeId: 2 })).toBeUndefined();
  });

  it("Raft frames: the sender's own id, and only within its role's groups", () => {
    const stream = "/tern.v1.RaftTransport/Stream";
    expect(identityRefusal(stream, broker1, "broker", { fromNodeId: 1 })).toBeUndefined();
    expect(identityRefusal(stream, broker1, "broker", { fromNodeId: 2 })).toMatch(/node 2/);
    expect(identityRefusal(stream, broker1, "controller", { fromNodeId: 1 })).toMatch(
      /Raft groups are among controllers/,
    );
    expect(identityRefusal(stream, controller0, "broker", { fromNodeId: 0 })).toMatch(
      /among brokers/,
    );
    expect(identityRefusal("/tern.v1.Broker/Produce", broker1, "broker", {})).toBeUndefined();
  });
});

// The gRPC rule table and its decisions without sockets (the real-process checks are in
// test/integration/grpc-acl.test.ts): every method is covered, whole-request refusals carry
// Kafka's codes, refused partitions are answered in place and in order, listings are filtered.
import { describe, expect, it } from "vitest";
import {
  aclAuthorizer,
  type AclBinding,
  type Operation,
  type ResourceType,
} from "../../common/acl.js";
import { requestAccess } from "../../common/acl-access.js";
import { loadTernProto } from "../../common/proto.js";
import { PEER_METHODS } from "../tls/peer-methods.js";
import { authorize } from "./grpc-authorizer.js";
import { GRPC_ACL_RULES, type RuleContext } from "./grpc-acl-rules.js";

const allow = (
  principal: string,
  operation: Operation,
  resourceType: ResourceType,
  resourceName: string,
): AclBinding => ({
  principal,
  host: "*",
  resourceType,
  resourceName,
  patternType: "literal",
  operation,
  permission: "allow",
});

function ctx(acls: AclBinding[], principal = "User:alice", superUsers: string[] = []): RuleContext {
  return {
    access: requestAccess(
      aclAuthorizer(() => acls, new Set(superUsers)),
      principal,
      "127.0.0.1",
    ),
    topicNames: () => ["a", "b"],
  };
}

const refusedCode = (d: ReturnType<typeof authorize>): string | undefined =>
  "refused" in d ? d.refused.errorName : undefined;

describe("GRPC_ACL_RULES", () => {
  it("covers every method of every tern service, or the method is peer-only", () => {
    const pkg = loadTernProto().grpc.tern.v1 as Record<
      string,
      { service?: Record<string, { path: string }> }
    >;
    const missing: string[] = [];
    let seen = 0;
    for (const ctor of Object.values(pkg)) {
      for (const method of Object.values(ctor.service ?? {})) {
        seen++;
        if (!GRPC_ACL_RULES.has(method.path) && !PEER_METHODS.has(method.path))
          missing.push(method.path);
      }
    }
    expect(missing).toEqual([]);
    expect(seen).toBeGreaterThan(40); // the services were found at all
    for (const path of GRPC_ACL_RULES.keys()) expect(PEER_METHODS.has(path)).toBe(false);
  });
});

describe("authorize", () => {
  const alice = ctx([
    allow("User:alice", "read", "topic", "a"),
    allow("User:alice", "read", "group", "g"),
  ]);

  it("answers refused partitions in place, in request order, and forwards only the allowed ones", () => {
    const request = {
      maxWaitMs: 500,
      partitions: [
        { topic: "b", partition: 0 },
        { topic: "a", partition: 0 },
        { topic: "b", partition: 1 },
      ],
    };
    const d = authorize("/tern.v1.Broker/Fetch", request, alice);
    if ("refused" in d) throw new Error("refused");
    expect(d.request.partitions).toEqual([{ topic: "a", partition: 0 }]);
    expect(d.request.maxWaitMs).toBe(500);
    const merged = d.answer!({
      partitions: [{ topic: "a", partition: 0, errorCode: "NONE", batches: [] }],
    }) as { partitions: any[] };
    expect(merged.partitions.map((p: any) => `${p.topic}/${p.partition}:${p.errorCode}`)).toEqual([
      "b/0:TOPIC_AUTHORIZATION_FAILED",
      "a/0:NONE",
      "b/1:TOPIC_AUTHORIZATION_FAILED",
    ]);
    expect(merged.partitions[0].batches).toEqual([]);
  });

  it("a fetch of refused partitions only does not wait; a produce with READ only is refused per partition", () => {
    const d = authorize(
      "/tern.v1.Broker/Fetch",
      { maxWaitMs: 500, partitions: [{ topic: "b", partition: 0 }] },
      alice,
    );
    if ("refused" in d) throw new Error("refused");
    expect(d.request).toMatchObject({ maxWaitMs: 0, partitions: [] });
    const p = authorize(
      "/tern.v1.Broker/Produce",
      { partitions: [{ topic: "a", partition: 0 }] },
      alice,
    );
    if ("refused" in p) throw new Error("refused");
    expect((p.answer!({ partitions: [] }).partitions as unknown[])[0]).toMatchObject({
      errorCode: "TOPIC_AUTHORIZATION_FAILED",
      errorMessage: 'User:alice may not write topic "a"',
    });
  });

  it("refuses whole requests with the resource's code", () => {
    expect(
      refusedCode(
        authorize("/tern.v1.Broker/Produce", { transactionalId: "t", partitions: [] }, alice),
      ),
    ).toBe("TRANSACTIONAL_ID_AUTHORIZATION_FAILED");
    expect(
      refusedCode(
        authorize(
          "/tern.v1.TransactionCoordinator/InitProducerId",
          { transactionalId: "t" },
          alice,
        ),
      ),
    ).toBe("TRANSACTIONAL_ID_AUTHORIZATION_FAILED");
    expect(
      refusedCode(
        authorize("/tern.v1.TransactionCoordinator/InitProducerId", { transactionalId: "" }, alice),
      ),
    ).toBe("CLUSTER_AUTHORIZATION_FAILED");
    expect(
      refusedCode(
        authorize(
          "/tern.v1.GroupCoordinator/ConsumerGroupHeartbeat",
          { groupId: "h", subscribedTopicNames: ["a"] },
          alice,
        ),
      ),
    ).toBe("GROUP_AUTHORIZATION_FAILED");
    expect(
      refusedCode(
        authorize(
          "/tern.v1.GroupCoordinator/ConsumerGroupHeartbeat",
          { groupId: "g", subscribedTopicNames: ["a"] },
          alice,
        ),
      ),
    ).toBeUndefined();
    expect(
      refusedCode(
        authorize(
          "/tern.v1.GroupCoordinator/OffsetCommit",
          { groupId: "g", partitions: [{ topic: "b" }] },
          alice,
        ),
      ),
    ).toBe("TOPIC_AUTHORIZATION_FAILED");
    expect(
      refusedCode(
        authorize("/tern.v1.Controller/CreateTopics", { topics: [{ name: "c" }] }, alice),
      ),
    ).toBe("TOPIC_AUTHORIZATION_FAILED");
    expect(refusedCode(authorize("/tern.v1.Controller/CreateAcls", { creations: [] }, alice))).toBe(
      "CLUSTER_AUTHORIZATION_FAILED",
    );
    expect(refusedCode(authorize("/tern.v1.Controller/RegisterNode", {}, alice))).toBe(
      "CLUSTER_AUTHORIZATION_FAILED",
    );
  });

  it("Kafka's idempotent-producer rule: IDEMPOTENT_WRITE on the cluster or WRITE on some topic", () => {
    const writer = ctx([allow("User:alice", "write", "topic", "b")]);
    expect(
      refusedCode(
        authorize(
          "/tern.v1.TransactionCoordinator/InitProducerId",
          { transactionalId: "" },
          writer,
        ),
      ),
    ).toBeUndefined();
    const idem = ctx([allow("User:alice", "idempotent-write", "cluster", "kafka-cluster")]);
    expect(
      refusedCode(
        authorize("/tern.v1.TransactionCoordinator/InitProducerId", { transactionalId: "" }, idem),
      ),
    ).toBeUndefined();
  });

  it("filters listings to what the caller may describe; internal topics stay in Metadata; super-users see all", () => {
    const m = authorize("/tern.v1.Controller/Metadata", {}, alice);
    if ("refused" in m) throw new Error("refused");
    const topics = [{ name: "a" }, { name: "b" }, { name: "__consumer_offsets", internal: true }];
    expect(
      (m.answer!({ metadata: { topics } }).metadata as { topics: any[] }).topics.map(
        (t: any) => t.name,
      ),
    ).toEqual(["a", "__consumer_offsets"]);
    const l = authorize("/tern.v1.Controller/ListTopics", {}, ctx([], "User:root", ["User:root"]));
    if ("refused" in l) throw new Error("refused");
    expect(l.answer!({ names: ["a", "b"] }).names).toEqual(["a", "b"]);
    const g = authorize("/tern.v1.GroupCoordinator/ListGroups", {}, alice);
    if ("refused" in g) throw new Error("refused");
    expect(g.answer!({ groups: [{ groupId: "g" }, { groupId: "h" }] }).groups).toEqual([
      { groupId: "g" },
    ]);
  });
});

// The AclAuthorizer decision: deny wins, implied DESCRIBE, wildcard and prefixed patterns,
// User:*, super-users, and no ACL refuses.
import { describe, expect, it } from "vitest";
import { aclAuthorizer, clientHostOf, matchesFilter, type AclBinding } from "./acl.js";

const allow = (
  principal: string,
  operation: AclBinding["operation"],
  resourceType: AclBinding["resourceType"],
  resourceName: string,
  patternType: AclBinding["patternType"] = "literal",
): AclBinding => ({
  principal,
  host: "*",
  resourceType,
  resourceName,
  patternType,
  operation,
  permission: "allow",
});
const deny = (...a: Parameters<typeof allow>): AclBinding => ({
  ...allow(...a),
  permission: "deny",
});

describe("aclAuthorizer", () => {
  it("a binding with a host other than * applies to clients from that address only", () => {
    const az = aclAuthorizer(
      () => [
        { ...allow("User:alice", "read", "topic", "a"), host: "10.1.2.3" },
        { ...deny("User:alice", "read", "topic", "b"), host: "10.9.9.9" },
        allow("User:alice", "read", "topic", "b"),
      ],
      new Set(),
    );
    expect(az.allowed("User:alice", "read", "topic", "a", "10.1.2.3")).toBe(true);
    expect(az.allowed("User:alice", "read", "topic", "a", "127.0.0.1")).toBe(false);
    expect(az.allowed("User:alice", "read", "topic", "b", "10.9.9.9")).toBe(false);
    expect(az.allowed("User:alice", "read", "topic", "b", "127.0.0.1")).toBe(true);
    expect(clientHostOf("::ffff:10.1.2.3")).toBe("10.1.2.3");
    expect(clientHostOf("::1")).toBe("::1");
  });

  it("allows only what a binding grants; no ACL refuses", () => {
    const az = aclAuthorizer(() => [allow("User:alice", "read", "topic", "a")], new Set());
    expect(az.allowed("User:alice", "read", "topic", "a", "127.0.0.1")).toBe(true);
    expect(az.allowed("User:alice", "write", "topic", "a", "127.0.0.1")).toBe(false);
    expect(az.allowed("User:alice", "read", "topic", "b", "127.0.0.1")).toBe(false);
    expect(az.allowed("User:bob", "read", "topic", "a", "127.0.0.1")).toBe(false);
    expect(az.allowed("User:alice", "read", "group", "a", "127.0.0.1")).toBe(false);
  });

  it("READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS; ALL allows everything", () => {
    const az = aclAuthorizer(
      () => [
        allow("User:a", "write", "topic", "t"),
        allow("User:a", "alter-configs", "topic", "t"),
        allow("User:b", "all", "group", "g"),
      ],
      new Set(),
    );
    expect(az.allowed("User:a", "describe", "topic", "t", "127.0.0.1")).toBe(true);
    expect(az.allowed("User:a", "describe-configs", "topic", "t", "127.0.0.1")).toBe(true);
    expect(az.allowed("User:a", "read", "topic", "t", "127.0.0.1")).toBe(false);
    expect(az.allowed("User:b", "read", "group", "g", "127.0.0.1")).toBe(true);
    expect(az.allowed("User:b", "delete", "group", "g", "127.0.0.1")).toBe(true);
  });

  it("a matching DENY wins over any ALLOW, and DENY ALL denies every operation", () => {
    const az = aclAuthorizer(
      () => [
        allow("User:*", "read", "topic", "*"),
        deny("User:eve", "read", "topic", "secret"),
        deny("User:mallory", "all", "topic", "pay", "prefixed"),
      ],
      new Set(),
    );
    expect(az.allowed("User:alice", "read", "topic", "secret", "127.0.0.1")).toBe(true);
    expect(az.allowed("User:eve", "read", "topic", "secret", "127.0.0.1")).toBe(false);
    expect(az.allowed("User:eve", "read", "topic", "other", "127.0.0.1")).toBe(true);
    expect(az.allowed("User:mallory", "read", "topic", "payments", "127.0.0.1")).toBe(false);
    expect(az.allowed("User:mallory", "read", "topic", "pa", "127.0.0.1")).toBe(true);
  });

  it("prefixed patterns match names that start with them; super-users are never refused", () => {
    const az = aclAuthorizer(
      () => [
        allow("User:app", "write", "transactional-id", "app-", "prefixed"),
        deny("User:root", "all", "topic", "*"),
      ],
      new Set(["User:root"]),
    );
    expect(az.allowed("User:app", "write", "transactional-id", "app-1", "127.0.0.1")).toBe(true);
    expect(az.allowed("User:app", "write", "transactional-id", "other-1", "127.0.0.1")).toBe(false);
    expect(az.allowed("User:root", "delete", "topic", "anything", "127.0.0.1")).toBe(true);
  });
});

describe("matchesFilter", () => {
  const b = allow("User:a", "read", "topic", "pay", "prefixed");
  it("matches undefined fields as anything, a pattern exactly, and 'match' by what applies to a name", () => {
    expect(matchesFilter(b, {})).toBe(true);
    expect(
      matchesFilter(b, { resourceType: "topic", patternType: "prefixed", resourceName: "pay" }),
    ).toBe(true);
    expect(
      matchesFilter(b, { resourceType: "topic", patternType: "literal", resourceName: "pay" }),
    ).toBe(false);
    expect(matchesFilter(b, { patternType: "match", resourceName: "payments" })).toBe(true);
    expect(matchesFilter(b, { patternType: "match", resourceName: "other" })).toBe(false);
    expect(matchesFilter(b, { principal: "User:b" })).toBe(false);
  });
});

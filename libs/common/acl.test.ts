// The AclAuthorizer decision: deny wins, implied DESCRIBE, wildcard and prefixed patterns,
// User:*, super-users, and no ACL refuses.
import { describe, expect, it } from "vitest";
import { aclAuthorizer, matchesFilter, type AclBinding } from "./acl.js";

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
  it("allows only what a binding grants; no ACL refuses", () => {
    const az = aclAuthorizer(() => [allow("User:alice", "read", "topic", "a")], new Set());
    expect(az.allowed("User:alice", "read", "topic", "a")).toBe(true);
    expect(az.allowed("User:alice", "write", "topic", "a")).toBe(false);
    expect(az.allowed("User:alice", "read", "topic", "b")).toBe(false);
    expect(az.allowed("User:bob", "read", "topic", "a")).toBe(false);
    expect(az.allowed("User:alice", "read", "group", "a")).toBe(false);
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
    expect(az.allowed("User:a", "describe", "topic", "t")).toBe(true);
    expect(az.allowed("User:a", "describe-configs", "topic", "t")).toBe(true);
    expect(az.allowed("User:a", "read", "topic", "t")).toBe(false);
    expect(az.allowed("User:b", "read", "group", "g")).toBe(true);
    expect(az.allowed("User:b", "delete", "group", "g")).toBe(true);
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
    expect(az.allowed("User:alice", "read", "topic", "secret")).toBe(true);
    expect(az.allowed("User:eve", "read", "topic", "secret")).toBe(false);
    expect(az.allowed("User:eve", "read", "topic", "other")).toBe(true);
    expect(az.allowed("User:mallory", "read", "topic", "payments")).toBe(false);
    expect(az.allowed("User:mallory", "read", "topic", "pa")).toBe(true);
  });

  it("prefixed patterns match names that start with them; super-users are never refused", () => {
    const az = aclAuthorizer(
      () => [
        allow("User:app", "write", "transactional-id", "app-", "prefixed"),
        deny("User:root", "all", "topic", "*"),
      ],
      new Set(["User:root"]),
    );
    expect(az.allowed("User:app", "write", "transactional-id", "app-1")).toBe(true);
    expect(az.allowed("User:app", "write", "transactional-id", "other-1")).toBe(false);
    expect(az.allowed("User:root", "delete", "topic", "anything")).toBe(true);
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

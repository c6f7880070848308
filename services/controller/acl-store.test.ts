// The replicated ACL store: a binding is stored once, a malformed one is refused alone, a
// delete filter removes every match and says which, and the snapshot form restores the same set.
import { describe, expect, it } from "vitest";
import type { AclBinding } from "../../libs/common/acl.js";
import {
  aclEntries,
  aclStoreFromSnapshot,
  createAcls,
  deleteAcls,
  describeAcls,
  newAclStore,
} from "./acl-store.js";

const binding = (over: Partial<AclBinding> = {}): AclBinding => ({
  principal: "User:alice",
  host: "*",
  resourceType: "topic",
  resourceName: "a",
  patternType: "literal",
  operation: "read",
  permission: "allow",
  ...over,
});

describe("acl store", () => {
  it("stores a binding once; refuses a malformed one with INVALID_REQUEST and keeps the others", () => {
    const store = newAclStore();
    const r = createAcls(store, {
      type: "createAcls",
      creations: [
        binding(),
        binding(),
        binding({ principal: "alice" }),
        binding({ resourceType: "cluster", resourceName: "x" }),
        binding({ operation: "write" }),
      ],
    });
    expect(r.results.map((x) => x.error?.error)).toEqual([
      "NONE",
      "NONE",
      "INVALID_REQUEST",
      "INVALID_REQUEST",
      "NONE",
    ]);
    expect(aclEntries(store)).toHaveLength(2);
    expect(r.changed).toBe(true);
    expect(createAcls(store, { type: "createAcls", creations: [binding()] }).changed).toBe(false);
  });

  it("deletes every binding a filter matches and answers them; an unmatched filter deletes nothing", () => {
    const store = newAclStore();
    createAcls(store, {
      type: "createAcls",
      creations: [binding(), binding({ operation: "write" }), binding({ principal: "User:bob" })],
    });
    const r = deleteAcls(store, {
      type: "deleteAcls",
      filters: [{ principal: "User:alice" }, { resourceName: "none" }],
    });
    expect(r.results[0]!.deleted.map((b) => b.operation).sort()).toEqual(["read", "write"]);
    expect(r.results[1]!.deleted).toEqual([]);
    expect(describeAcls(store, {}).map((b) => b.principal)).toEqual(["User:bob"]);
  });

  it("restores the same bindings from its snapshot form and drops malformed ones", () => {
    const store = newAclStore();
    createAcls(store, {
      type: "createAcls",
      creations: [
        binding(),
        binding({ resourceType: "group", resourceName: "g", patternType: "prefixed" }),
      ],
    });
    const snap = JSON.parse(
      JSON.stringify([...aclEntries(store), { principal: "User:x", resourceType: "nope" }]),
    );
    expect(aclEntries(aclStoreFromSnapshot(snap))).toEqual(aclEntries(store));
  });
});

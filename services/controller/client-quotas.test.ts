import { describe, expect, it } from "vitest";
import {
  alterClientQuotas,
  clientQuotaEntries,
  clientQuotaStoreFromSnapshot,
  describeClientQuotas,
  newClientQuotaStore,
} from "./client-quotas.js";

describe("the controller's client-quota store", () => {
  it("sets, merges and removes values per entity; each entity's result stands alone", () => {
    const store = newClientQuotaStore();
    const r = alterClientQuotas(store, {
      type: "alterClientQuotas",
      entries: [
        { entity: { user: "alice" }, ops: [{ key: "producer_byte_rate", value: 1000 }] },
        { entity: { user: null }, ops: [{ key: "producer_byte_rate", value: 1.5 }] },
        { entity: {}, ops: [{ key: "producer_byte_rate", value: 1 }] },
      ],
    });
    expect(r.changed).toBe(true);
    expect(r.results.map((x) => x.error)).toEqual(["NONE", "INVALID_REQUEST", "INVALID_REQUEST"]);
    alterClientQuotas(store, {
      type: "alterClientQuotas",
      entries: [{ entity: { user: "alice" }, ops: [{ key: "request_percentage", value: 50 }] }],
    });
    expect(clientQuotaEntries(store)).toEqual([
      { entity: { user: "alice" }, values: { producer_byte_rate: 1000, request_percentage: 50 } },
    ]);
    // A snapshot restores the same store.
    const copy = clientQuotaStoreFromSnapshot(
      JSON.parse(JSON.stringify(clientQuotaEntries(store))),
    );
    expect(clientQuotaEntries(copy)).toEqual(clientQuotaEntries(store));
    // Removing the last values removes the entity.
    alterClientQuotas(store, {
      type: "alterClientQuotas",
      entries: [
        {
          entity: { user: "alice" },
          ops: [
            { key: "producer_byte_rate", remove: true },
            { key: "request_percentage", remove: true },
          ],
        },
      ],
    });
    expect(store.size).toBe(0);
  });

  it("refuses an entity named twice in one request, and filters like DescribeClientQuotas", () => {
    const store = newClientQuotaStore();
    const twice = alterClientQuotas(store, {
      type: "alterClientQuotas",
      entries: [
        { entity: { clientId: "x" }, ops: [{ key: "consumer_byte_rate", value: 1 }] },
        { entity: { clientId: "x" }, ops: [{ key: "consumer_byte_rate", value: 2 }] },
      ],
    });
    expect(twice.results.map((x) => x.message)).toEqual([
      "client-id=x appears more than once in the request",
      "client-id=x appears more than once in the request",
    ]);
    alterClientQuotas(store, {
      type: "alterClientQuotas",
      entries: [
        { entity: { clientId: "x" }, ops: [{ key: "consumer_byte_rate", value: 1 }] },
        { entity: { user: "u", clientId: "x" }, ops: [{ key: "consumer_byte_rate", value: 2 }] },
      ],
    });
    const exact = [{ entityType: "client-id" as const, match: "exact" as const, name: "x" }];
    expect(describeClientQuotas(store, exact, false)).toHaveLength(2);
    expect(describeClientQuotas(store, exact, true)).toEqual([
      { entity: { clientId: "x" }, values: { consumer_byte_rate: 1 } },
    ]);
  });
});

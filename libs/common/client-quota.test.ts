import { describe, expect, it } from "vitest";
import {
  entityMatches,
  invalidQuotaValue,
  QuotaTable,
  type ClientQuotaEntry,
} from "./client-quota.js";

const rate = (n: number) => ({ producer_byte_rate: n });

describe("client quota precedence (Kafka's order)", () => {
  const all: ClientQuotaEntry[] = [
    { entity: { user: "alice", clientId: "app" }, values: rate(1) },
    { entity: { user: "alice", clientId: null }, values: rate(2) },
    { entity: { user: "alice" }, values: rate(3) },
    { entity: { user: null, clientId: "app" }, values: rate(4) },
    { entity: { user: null, clientId: null }, values: rate(5) },
    { entity: { user: null }, values: rate(6) },
    { entity: { clientId: "app" }, values: rate(7) },
    { entity: { clientId: null }, values: rate(8) },
  ];

  it("takes the most specific entity that sets the key, level by level", () => {
    // Remove entries from the most specific down: each time the next one applies.
    for (let i = 0; i < all.length; i++) {
      const t = new QuotaTable(all.slice(i));
      expect(t.resolve("producer_byte_rate", "alice", "app")?.limit).toBe(i + 1);
    }
    expect(new QuotaTable([]).resolve("producer_byte_rate", "alice", "app")).toBeUndefined();
  });

  it("resolves each key on its own, and <default> entities count each user separately", () => {
    const t = new QuotaTable([
      { entity: { user: null }, values: { consumer_byte_rate: 100 } },
      { entity: { clientId: "app" }, values: { producer_byte_rate: 50 } },
    ]);
    expect(t.resolve("consumer_byte_rate", "bob", "app")).toEqual({
      limit: 100,
      sensor: "bob\u0000",
      principal: "bob",
    });
    expect(t.resolve("consumer_byte_rate", "carol", "app")!.sensor).toBe("carol\u0000");
    expect(t.resolve("producer_byte_rate", "bob", "app")).toEqual({
      limit: 50,
      sensor: "\u0000app",
      principal: "client-id:app",
    });
    expect(t.resolve("request_percentage", "bob", "app")).toBeUndefined();
  });

  it("checks values as Kafka does and matches describe filters", () => {
    expect(invalidQuotaValue("producer_byte_rate", 1.5)).toMatch(/whole number/);
    expect(invalidQuotaValue("request_percentage", 12.5)).toBeUndefined();
    expect(invalidQuotaValue("request_percentage", 0)).toMatch(/positive/);
    expect(invalidQuotaValue("bogus", 1)).toMatch(/unknown quota key/);
    const e = { user: "alice", clientId: null };
    expect(entityMatches(e, [{ entityType: "user", match: "exact", name: "alice" }], false)).toBe(
      true,
    );
    expect(entityMatches(e, [{ entityType: "user", match: "exact", name: "alice" }], true)).toBe(
      false,
    );
    expect(entityMatches(e, [{ entityType: "client-id", match: "default" }], false)).toBe(true);
    expect(entityMatches({ user: "a" }, [{ entityType: "client-id", match: "any" }], false)).toBe(
      false,
    );
  });
});

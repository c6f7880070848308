import { describe, expect, it } from "vitest";
import { silentLogger } from "../common/logger.js";
import { SeededRandom } from "../common/prng.js";
import { backoffMs, ControllerClient, itemErrorOf } from "./controller-client.js";

describe("controller client helpers", () => {
  it("backs off exponentially with jitter, capped at one second", () => {
    const random = new SeededRandom(7);
    for (let attempt = 0; attempt < 20; attempt++) {
      const cap = Math.min(1_000, 50 * 2 ** Math.min(attempt, 10));
      for (let i = 0; i < 20; i++) {
        const ms = backoffMs(attempt, random);
        expect(ms).toBeGreaterThanOrEqual(cap / 2);
        expect(ms).toBeLessThanOrEqual(cap);
      }
    }
  });

  it("turns per-item errors into TernErrors and NONE into nothing", () => {
    expect(itemErrorOf({ code: "NONE", message: "" })).toBeUndefined();
    expect(itemErrorOf(undefined)).toBeUndefined();
    const e = itemErrorOf({ code: "TOPIC_ALREADY_EXISTS", message: 'topic "t" already exists' })!;
    expect(e.errorName).toBe("TOPIC_ALREADY_EXISTS");
    expect(e.message).toBe('topic "t" already exists');
    expect(itemErrorOf({ code: 36, message: "x" })!.errorName).toBe("TOPIC_ALREADY_EXISTS");
    expect(itemErrorOf({ code: "NO_SUCH_CODE", message: "x" })!.errorName).toBe(
      "UNKNOWN_SERVER_ERROR",
    );
  });

  it("gives up after its bounded attempts when no controller answers", async () => {
    const client = new ControllerClient({
      controllers: [
        { id: 0, host: "127.0.0.1", port: 1 },
        { id: 1, host: "127.0.0.1", port: 2 },
      ],
      logger: silentLogger(),
      requestTimeoutMs: 500,
      attemptsMax: 3,
    });
    const started = Date.now();
    try {
      const err = await client.metadata().catch((e: unknown) => e);
      expect((err as { errorName?: string }).errorName).toBe("NETWORK_EXCEPTION");
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      client.close();
    }
  });
});

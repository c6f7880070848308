// The metadata publisher's cost bounds: a publication encodes each view variant once whatever the
// number of streams, a backed-up stream keeps only the newest view, and publications are paced
// by what the last one cost (a burst of changes to a large view takes a bounded share of the
// controller), capped so a change is never held long.
import { EventEmitter } from "node:events";
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../libs/common/logger.js";
import { ManualClock } from "../../libs/runtime/testing/manual-clock.js";
import type { WatchMetadataResponse } from "../../libs/common/proto-types/index.js";
import { MetadataPublisher } from "./metadata-publisher.js";

class FakeCall extends EventEmitter {
  readonly written: unknown[] = [];
  full = false;
  write(m: unknown): boolean {
    this.written.push(m);
    return !this.full;
  }
  end(): void {}
}

const immediates = (): Promise<void> => new Promise((r) => setImmediate(r));

function setUp(viewCostMs: number) {
  const clock = new ManualClock(1_000);
  let version = 1n;
  const encoded: WatchMetadataResponse[] = [];
  const publisher = new MetadataPublisher({
    view: () => {
      clock.advance(viewCostMs); // building a large view takes this long
      return { version, metadata: { version: String(version) } as never };
    },
    encode: (m) => {
      encoded.push(m);
      return Buffer.from(JSON.stringify({ v: m.metadata?.version ?? null, k: m.keepalive }));
    },
    keepaliveMs: 60_000,
    subscribersMax: 100,
    logger: silentLogger(),
    scheduler: clock,
    nowMs: () => clock.monotonicMs(),
  });
  const change = (): void => {
    version += 1n;
    publisher.changed();
  };
  return { clock, publisher, encoded, change, version: () => version };
}

describe("MetadataPublisher", () => {
  it("encodes a view once per publication and writes the same bytes to every stream", async () => {
    const { publisher, encoded, change } = setUp(0);
    const calls = Array.from({ length: 9 }, () => new FakeCall());
    for (const [i, c] of calls.entries()) publisher.subscribe(c as never, 0n, true, i);
    encoded.length = 0;
    change();
    await immediates();
    expect(encoded.length).toBe(1);
    const sent = calls.map((c) => c.written.at(-1));
    expect(sent.every((b) => Buffer.isBuffer(b) && b === sent[0])).toBe(true);
    expect(JSON.parse((sent[0] as Buffer).toString())).toMatchObject({ v: "2" });
    publisher.close();
  });

  it("keeps only the newest view for a stream that is backed up", async () => {
    const { publisher, change, clock } = setUp(0);
    const call = new FakeCall();
    publisher.subscribe(call as never, 0n, true, 1);
    call.full = true;
    change(); // written, and the stream reports full
    await immediates();
    for (let i = 0; i < 5; i++) {
      clock.advance(1);
      change();
      await immediates();
    }
    const before = call.written.length;
    call.full = false;
    call.emit("drain");
    expect(call.written.length).toBe(before + 1);
    expect(JSON.parse((call.written.at(-1) as Buffer).toString())).toMatchObject({ v: "7" });
    publisher.close();
  });

  it("paces publications by their cost, at most PUBLISH_GAP_MAX_MS apart", async () => {
    const { publisher, encoded, change, clock } = setUp(20);
    publisher.subscribe(new FakeCall() as never, 0n, true, 1);
    encoded.length = 0;
    change();
    await immediates();
    expect(encoded.length).toBe(1); // the first change goes out at once
    // It cost 20 ms: the next waits 4 x 20 ms after it, however many changes come meanwhile.
    for (let i = 0; i < 10; i++) change();
    await immediates();
    clock.advance(79);
    expect(encoded.length).toBe(1);
    clock.advance(1);
    expect(encoded.length).toBe(2);
    expect(encoded[1]!.metadata?.version).toBe("12");
    publisher.close();

    const slow = setUp(1_000);
    slow.publisher.subscribe(new FakeCall() as never, 0n, true, 1);
    slow.encoded.length = 0;
    slow.change();
    await immediates();
    slow.change();
    await immediates();
    slow.clock.advance(499);
    expect(slow.encoded.length).toBe(1);
    slow.clock.advance(1);
    expect(slow.encoded.length).toBe(2);
    slow.publisher.close();
  });
});

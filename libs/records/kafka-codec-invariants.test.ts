// The Kafka codec tells bad input from a broken invariant: a short or malformed request is a
// DecodeError (that connection's problem), a value this process tries to write that its field
// cannot hold is an AssertionError (a bug: the request paths stop the process on it,
// libs/common/assert.ts haltOnAssertion).
import { describe, expect, it } from "vitest";
import { AssertionError } from "../common/assert.js";
import { DecodeError } from "../common/decode-error.js";
import { KafkaReader, KafkaWriter, kafkaBodyBytes } from "./kafka-codec.js";

describe("kafka codec invariants", () => {
  it("refuses bad input with a DecodeError", () => {
    expect(() => new KafkaReader(Buffer.from([0, 1])).int32()).toThrow(DecodeError);
    expect(() =>
      new KafkaReader(Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0x7f])).uvarint(),
    ).toThrow(DecodeError);
  });

  it("asserts what the writer is given", () => {
    const w = new KafkaWriter();
    expect(() => w.uvarint(-1)).toThrow(AssertionError);
    expect(() => w.uvarint(2 ** 35)).toThrow(AssertionError);
    expect(() => w.int16(0x8000)).toThrow(AssertionError);
    expect(() => w.int32(2 ** 31)).toThrow(AssertionError);
    const at = w.reserveInt32();
    expect(() => w.fillInt32(at + 1, 7)).toThrow(AssertionError);
    expect(() => w.view(0, w.pos + 1)).toThrow(AssertionError);
    expect(() => new KafkaReader(Buffer.alloc(4), 0, 8)).toThrow(AssertionError);
    // Nothing half-written: the writer still holds the 4 reserved bytes only.
    expect(w.pos).toBe(4);
    w.fillInt32(at, 7);
    expect(w.finish().readInt32BE(0)).toBe(7);
  });

  it("keeps attached bytes by reference, in order, and refuses to change what came before them", () => {
    const w = new KafkaWriter(8);
    const at = w.reserveInt32();
    const stored = Buffer.alloc(10_000, 3);
    w.int16(1).attach(stored).int16(2);

    expect(() => w.fillInt32(at, 1)).toThrow(AssertionError); // before the attached bytes
    expect(() => w.finish()).toThrow(AssertionError); // one buffer would drop the pieces
    w.int32(0x01020304); // grows the writer's buffer: the pieces taken before keep their bytes
    const body = w.finishBody() as readonly Uint8Array[];
    expect(kafkaBodyBytes(body)).toBe(4 + 2 + 10_000 + 2 + 4);
    expect(body[1]).toBe(stored);
    expect(Buffer.concat(body)).toEqual(
      Buffer.concat([Buffer.from([0, 0, 0, 0, 0, 1]), stored, Buffer.from([0, 2, 1, 2, 3, 4])]),
    );
  });
});

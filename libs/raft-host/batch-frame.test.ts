import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { describe, expect, it } from "vitest";
import { PROTO_LOADER_OPTIONS, protoRoot } from "../common/proto.js";
import { SeededRandom } from "../common/prng.js";
import { encodeMessage } from "../raft/codec.js";
import { MessageType, type Message } from "../raft/types.js";
import { decodeBatchFrame, encodeBatchFrame, encodeMessageFrame } from "./batch-frame.js";
import { messageSizeBytes } from "../raft/codec.js";
import type { RaftBatchWire } from "./raft-proto.js";
import { isDecodeError } from "../common/decode-error.js";

// protobufjs's own codec for RaftBatch, from the .proto: the reference our frame codec must match.
function reference(): grpc.MethodDefinition<RaftBatchWire, unknown> {
  const def = protoLoader.loadSync("tern/v1/raft.proto", {
    ...PROTO_LOADER_OPTIONS,
    includeDirs: [protoRoot()],
  });
  const pkg = grpc.loadPackageDefinition(def) as any;
  return (pkg.tern.v1.RaftTransport as grpc.ServiceClientConstructor).service
    .Stream as grpc.MethodDefinition<RaftBatchWire, unknown>;
}

function randomBatch(rng: SeededRandom): RaftBatchWire {
  const ids = [0, 1, 2, 3, 127, 128, 300, 2 ** 31 - 1, -1, -(2 ** 31)];
  const n = rng.int(0, 20);
  const messages = Array.from({ length: n }, () => {
    const bytes = new Uint8Array(rng.int(0, 300));
    for (let i = 0; i < bytes.length; i++) bytes[i] = rng.int(0, 256);
    const groupId = rng.int(0, 4) === 0 ? "" : `topic-é/${rng.int(0, 100_000)}`;
    return { groupId, message: bytes };
  });
  return {
    fromNodeId: ids[rng.int(0, ids.length)]!,
    toNodeId: ids[rng.int(0, ids.length)]!,
    messages,
  };
}

function normalized(b: RaftBatchWire) {
  return {
    fromNodeId: b.fromNodeId,
    toNodeId: b.toNodeId,
    messages: b.messages.map((m) => ({ groupId: m.groupId, message: Array.from(m.message) })),
  };
}

describe("RaftBatch frame codec", () => {
  const ref = reference();

  it("writes exactly the bytes protobufjs writes, and each side decodes the other", () => {
    const rng = new SeededRandom(42);
    for (let round = 0; round < 100; round++) {
      const batch = randomBatch(rng);
      const ours = encodeBatchFrame(batch);
      const theirs = ref.requestSerialize(batch);
      expect(Buffer.compare(ours, theirs)).toBe(0);
      expect(normalized(decodeBatchFrame(theirs))).toEqual(normalized(batch));
      expect(normalized(ref.requestDeserialize(ours) as RaftBatchWire)).toEqual(normalized(batch));
    }
  });

  it("encodes queued messages straight into the frame, byte-identical to encoding them one by one", () => {
    const rng = new SeededRandom(7);
    for (let round = 0; round < 50; round++) {
      const items = Array.from({ length: rng.int(0, 12) }, (_, i) => {
        const entries = Array.from({ length: rng.int(0, 4) }, (_, k) => ({
          term: 3,
          index: 10 + k,
          type: 0,
          data: new Uint8Array(rng.int(0, 2000)).fill(k),
        }));
        const message: Message = {
          type: MessageType.Append,
          from: 1,
          to: 2,
          term: 3,
          logTerm: 2,
          index: 9,
          entries,
          commit: 8,
          reject: false,
          rejectHint: 0,
          ...(i % 3 === 0 ? { context: new Uint8Array([1, 2]) } : {}),
        };
        return { groupId: `g/${rng.int(0, 50)}`, message, sizeBytes: messageSizeBytes(message) };
      });
      const direct = encodeMessageFrame(1, 2, items);
      const viaObjects = encodeBatchFrame({
        fromNodeId: 1,
        toNodeId: 2,
        messages: items.map((x) => ({ groupId: x.groupId, message: encodeMessage(x.message) })),
      });
      expect(Buffer.compare(direct, viaObjects)).toBe(0);
    }
  });

  it("skips unknown fields and rejects truncated input", () => {
    const batch = {
      fromNodeId: 1,
      toNodeId: 2,
      messages: [{ groupId: "g/1", message: new Uint8Array([1, 2, 3]) }],
    };
    const bytes = encodeBatchFrame(batch);
    // Field 9 (varint 5) and field 10 (len 2) appended: a newer sender's extra fields.
    const extended = Buffer.concat([bytes, Buffer.from([9 << 3, 5, (10 << 3) | 2, 2, 7, 7])]);
    expect(normalized(decodeBatchFrame(extended))).toEqual(normalized(batch));
    for (let cut = 1; cut < bytes.length; cut++) {
      const truncated = bytes.subarray(0, cut);
      let threw = false;
      try {
        decodeBatchFrame(truncated);
      } catch (err) {
        threw = isDecodeError(err, "raft-batch");
      }
      // Cutting exactly between fields leaves a valid shorter frame; anything else must throw.
      if (!threw) expect(() => ref.requestDeserialize(truncated)).not.toThrow();
    }
  });
});

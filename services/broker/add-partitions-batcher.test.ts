// AddPartitionsBatcher: the partitions of one producer's transaction asked in the same turn go
// in one request and each gets its own answer; other producers, epochs, modes or coordinators,
// and later turns, get requests of their own; a failed request fails every partition in it.
import { describe, expect, it } from "vitest";
import { systemClock } from "../../libs/runtime/system-clock.js";
import { AddPartitionsBatcher, type AddRequest } from "./add-partitions-batcher.js";

const request = (producerEpoch = 1, verifyOnly = false) => ({
  transactionalId: "t",
  producerId: "7",
  producerEpoch,
  verifyOnly,
});

function recording(answer: (r: AddRequest) => string = () => "NONE") {
  const sent: Array<{ address: string; request: AddRequest }> = [];
  const batcher = new AddPartitionsBatcher((address, r) => {
    sent.push({ address, request: r });
    return Promise.resolve(
      r.partitions.map((p) => ({
        topicPartition: p,
        errorCode: p.topic === "refused" ? "UNKNOWN_TOPIC_OR_PARTITION" : answer(r),
        errorMessage: p.topic === "refused" ? "no such topic" : "",
      })),
    );
  }, systemClock);
  return { sent, batcher };
}

describe("AddPartitionsBatcher", () => {
  it("sends the partitions of one transaction asked in one turn as one request", async () => {
    const { sent, batcher } = recording();
    const answers = await Promise.all([
      batcher.add("c1", request(), "a", 0, 5_000),
      batcher.add("c1", request(), "a", 1, 5_000),
      batcher.add("c1", request(), "refused", 0, 2_000),
    ]);
    expect(sent).toHaveLength(1);
    expect(sent[0]!.request.partitions).toEqual([
      { topic: "a", partition: 0 },
      { topic: "a", partition: 1 },
      { topic: "refused", partition: 0 },
    ]);
    expect(answers.map((a) => a.errorCode)).toEqual(["NONE", "NONE", "UNKNOWN_TOPIC_OR_PARTITION"]);
    expect(answers[2]!.errorMessage).toBe("no such topic");
  });

  it("keeps other epochs, modes, coordinators and later turns apart", async () => {
    const { sent, batcher } = recording();
    await Promise.all([
      batcher.add("c1", request(1), "a", 0, 5_000),
      batcher.add("c1", request(2), "a", 1, 5_000),
      batcher.add("c1", request(1, true), "a", 2, 5_000),
      batcher.add("c2", request(1), "a", 3, 5_000),
    ]);
    expect(sent).toHaveLength(4);
    await batcher.add("c1", request(1), "a", 4, 5_000);
    expect(sent).toHaveLength(5);
    expect(sent[4]!.request.partitions).toEqual([{ topic: "a", partition: 4 }]);
  });

  it("fails every partition of a failed request, and names a partition the answer left out", async () => {
    const failing = new AddPartitionsBatcher(
      () => Promise.reject(new Error("unavailable")),
      systemClock,
    );
    const both = [
      failing.add("c1", request(), "a", 0, 100),
      failing.add("c1", request(), "a", 1, 100),
    ];
    for (const p of both) await expect(p).rejects.toThrow("unavailable");
    const partial = new AddPartitionsBatcher(
      () => Promise.resolve([{ topicPartition: { topic: "a", partition: 0 }, errorCode: "NONE" }]),
      systemClock,
    );
    const [first, second] = await Promise.all([
      partial.add("c1", request(), "a", 0, 100),
      partial.add("c1", request(), "a", 1, 100),
    ]);
    expect(first!.errorCode).toBe("NONE");
    expect(second!.errorCode).toBe("UNKNOWN_SERVER_ERROR");
  });

  it("reads an answer that names no partitions in the order asked", async () => {
    const unnamed = new AddPartitionsBatcher(
      () => Promise.resolve([{ errorCode: "NONE" }, { errorCode: "INVALID_TXN_STATE" }]),
      systemClock,
    );
    const answers = await Promise.all([
      unnamed.add("c1", request(), "a", 0, 100),
      unnamed.add("c1", request(), "a", 1, 100),
    ]);
    expect(answers.map((a) => a.errorCode)).toEqual(["NONE", "INVALID_TXN_STATE"]);
  });
});

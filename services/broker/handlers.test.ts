// The request handlers over a real single-node raft host (in-process, temp dir): validation
// codes, idempotent answers, long-poll wake-up and timeout, markers and list offsets.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../../libs/common/poll.js";
import { ManualClock } from "../../libs/runtime/testing/manual-clock.js";
import { systemClock } from "../../libs/runtime/system-clock.js";
import { drive, runUntil } from "../../libs/common/testing/virtual-time.js";
import { silentLogger } from "../../libs/common/logger.js";
import { TernError } from "../../libs/common/errors.js";
import type { RaftGroup } from "../../libs/raft-host/api.js";
import { openRaftHost, type RaftHost } from "../../libs/raft-host/host.js";
import { loadTernProto } from "../../libs/common/proto.js";
import { fetchResponseSerializer } from "./fetch-codec.js";
import { createFetchHandler } from "./fetch-handler.js";
import { createListOffsetsHandler } from "./list-offsets-handler.js";
import { LocalPartition, type PartitionDirectory } from "./local-partition.js";
import { partitionForTest } from "./testing/partition-for-test.js";
import { createProduceHandler, readSimpleBatch } from "./produce-handler.js";
import { PartitionService } from "./partition-service/partition-service.js";
import { validateBatch } from "./partition-service/produce.js";
import { createWriteTxnMarkersHandler } from "./txn-markers-handler.js";
import type { TxnVerifier } from "./txn-verifier.js";
import { acceptsPartial } from "../../libs/server/testing/accepts-partial.js";

const logger = silentLogger();
let host: RaftHost;
let dir: string;
const partitions = new Map<string, LocalPartition>();
const verifierCalls: string[] = [];
let verifierAnswer: "NONE" | "INVALID_TXN_STATE" = "INVALID_TXN_STATE";

const directory: PartitionDirectory = {
  local: (t, p) => partitions.get(`${t}/${p}`),
  lookup: (t, p) =>
    t === "__consumer_offsets"
      ? "internal"
      : t === "remote" && p === 0
        ? "ok"
        : partitions.has(`${t}/${p}`)
          ? "ok"
          : "unknown",
  endpoint: (id) =>
    id === 7 ? { nodeId: 7, address: "127.0.0.1:7777" } : { nodeId: -1, address: "" },
  metadataLeader: (t) => (t === "remote" ? 7 : -1),
  locals: () => partitions.values(),
};
const verifier: TxnVerifier = {
  verify: async (tid, pid, epoch, topic, partition, mode = "verify") => {
    verifierCalls.push(
      `${tid}:${pid}:${epoch}:${topic}/${partition}${mode === "add" ? ":add" : ""}`,
    );
    return verifierAnswer === "NONE"
      ? { error: "NONE", message: "" }
      : { error: "INVALID_TXN_STATE", message: "not added" };
  },
  forget: () => undefined,
};
const service = new PartitionService({
  directory,
  verifier,
  clock: systemClock,
  logger,
  offsetsMarkerWriter: undefined,
});
const produce = acceptsPartial(createProduceHandler(service));
/** These tests read proto records: the gRPC edge's decode_records form. */
const decoding =
  <R>(handler: (request: unknown) => Promise<R>) =>
  (request: unknown): Promise<R> =>
    handler({ decodeRecords: true, ...(request as object) });
const fetch = decoding(acceptsPartial(createFetchHandler(service)));
const listOffsets = acceptsPartial(createListOffsetsHandler(service));
const markers = acceptsPartial(createWriteTxnMarkersHandler(service));
const rec = (v: string, extra: Record<string, unknown> = {}): unknown => ({
  value: Buffer.from(v),
  ...extra,
});

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "tern-broker-handlers-"));
  host = await openRaftHost({
    nodeId: 0,
    dataDir: dir,
    logger,
    tickMs: 10,
    electionTicks: 10,
    heartbeatTicks: 2,
    metrics: false,
  });
  for (const t of ["a", "b"]) {
    const sm = partitionForTest(t, 0);
    const group = await host.openGroup({ groupId: `${t}/0`, initialVoters: [0], stateMachine: sm });
    partitions.set(`${t}/0`, new LocalPartition(t, 0, group, sm));
  }
  await until(
    "leaders of a/0 and b/0",
    20_000,
    () => [...partitions.values()].every((p) => p.group.isLeader()) || undefined,
    { intervalMs: 20 },
  );
}, 30_000);

afterAll(async () => {
  await host?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("validateBatch", () => {
  const now = 1_000_000;
  it("refuses each kind of bad batch with its code", () => {
    const code = (raw: unknown, tid = ""): string | undefined => {
      const read = readSimpleBatch(raw as Parameters<typeof readSimpleBatch>[0]);
      const r = "error" in read ? read : validateBatch(read, tid, now, 1 << 20);
      return "error" in r ? (r.error ?? "NONE") : undefined;
    };
    expect(code({ producerId: "-1", records: [] })).toBe("INVALID_RECORD");
    expect(code({ producerId: "x1", records: [rec("a")] })).toBe("CORRUPT_MESSAGE");
    expect(code({ producerId: "-1", records: [rec("a", { timestampMs: "-3" })] })).toBe(
      "INVALID_TIMESTAMP",
    );
    expect(
      code({ producerId: "-1", records: [rec("a", { timestampMs: String(now + 2 * 3600_000) })] }),
    ).toBe("INVALID_TIMESTAMP");
    expect(code({ producerId: "-1", records: [{ value: Buffer.alloc(2 << 20) }] })).toBe(
      "MESSAGE_TOO_LARGE",
    );
    expect(
      code({
        producerId: "-1",
        records: Array.from({ length: 20 }, () => ({ value: Buffer.alloc(60_000) })),
      }),
    ).toBe("MESSAGE_TOO_LARGE");
    expect(
      code({ producerId: "-1", records: Array.from({ length: 10_001 }, () => rec("a")) }),
    ).toBe("RECORD_LIST_TOO_LARGE");
    expect(code({ producerId: "-1", isTransactional: true, records: [rec("a")] })).toBe(
      "INVALID_RECORD",
    );
    expect(
      code({
        producerId: "5",
        producerEpoch: 0,
        baseSequence: 0,
        isTransactional: true,
        records: [rec("a")],
      }),
    ).toBe("INVALID_REQUEST");
    expect(code({ producerId: "5", producerEpoch: 0, baseSequence: -2, records: [rec("a")] })).toBe(
      "INVALID_RECORD",
    );
    expect(code({ producerId: "-1", isControl: true, records: [rec("a")] })).toBe("INVALID_RECORD");
    expect(code({ producerId: "-1", records: [rec("a", { timestampMs: "5" })] })).toBeUndefined();
  });
});

describe("handlers over a single-node raft host", () => {
  it("produces, answers duplicates with original offsets, and refuses bad items per partition", async () => {
    const r = (await produce({
      acks: -1,
      partitions: [
        {
          topic: "a",
          partition: 0,
          batch: {
            producerId: "9",
            producerEpoch: 0,
            baseSequence: 0,
            records: [rec("x"), rec("y")],
          },
        },
        { topic: "nope", partition: 0, batch: { producerId: "-1", records: [rec("x")] } },
        {
          topic: "__consumer_offsets",
          partition: 0,
          batch: { producerId: "-1", records: [rec("x")] },
        },
        { topic: "remote", partition: 0, batch: { producerId: "-1", records: [rec("x")] } },
        { topic: "a", partition: 0, batch: { producerId: "-1", records: [rec("x")] } },
      ],
    })) as any;
    expect(r.partitions.map((p: any) => p.errorCode)).toEqual([
      "NONE",
      "UNKNOWN_TOPIC_OR_PARTITION",
      "INVALID_TOPIC_EXCEPTION",
      "NOT_LEADER_OR_FOLLOWER",
      "INVALID_REQUEST",
    ]);
    expect(r.partitions[0].baseOffset).toBe("0");
    expect(r.partitions[3].leader).toEqual({ nodeId: 7, address: "127.0.0.1:7777" });
    const dup = (await produce({
      partitions: [
        {
          topic: "a",
          partition: 0,
          batch: {
            producerId: "9",
            producerEpoch: 0,
            baseSequence: 0,
            records: [rec("x"), rec("y")],
          },
        },
      ],
    })) as any;
    expect(dup.partitions[0]).toMatchObject({ errorCode: "NONE", baseOffset: "0" });
    const bad = (await produce({
      acks: 2,
      partitions: [{ topic: "a", partition: 0, batch: { producerId: "-1", records: [rec("x")] } }],
    })) as any;
    expect(bad.partitions[0].errorCode).toBe("INVALID_REQUIRED_ACKS");
  });

  it("verifies the first transactional append with the coordinator, then not again", async () => {
    const txn = {
      producerId: "11",
      producerEpoch: 0,
      baseSequence: 0,
      isTransactional: true,
      records: [rec("t")],
    };
    verifierAnswer = "INVALID_TXN_STATE";
    const refused = (await produce({
      transactionalId: "tx",
      partitions: [{ topic: "b", partition: 0, batch: txn }],
    })) as any;
    expect(refused.partitions[0].errorCode).toBe("INVALID_TXN_STATE");
    expect(verifierCalls).toEqual(["tx:11:0:b/0"]);
    verifierAnswer = "NONE";
    const ok = (await produce({
      transactionalId: "tx",
      partitions: [{ topic: "b", partition: 0, batch: txn }],
    })) as any;
    expect(ok.partitions[0].errorCode).toBe("NONE");
    const more = (await produce({
      transactionalId: "tx",
      partitions: [{ topic: "b", partition: 0, batch: { ...txn, baseSequence: 1 } }],
    })) as any;
    expect(more.partitions[0].errorCode).toBe("NONE");
    expect(verifierCalls.length).toBe(2);
    const lso = (await listOffsets({
      isolationLevel: "READ_COMMITTED",
      partitions: [{ topic: "b", partition: 0, timestampMs: "-1" }],
    })) as any;
    expect(lso.partitions[0].offset).toBe(ok.partitions[0].baseOffset);
    const m = (await markers({
      markers: [
        {
          producerId: "11",
          producerEpoch: 0,
          controlType: "COMMIT",
          coordinatorEpoch: 3,
          partitions: [
            { topic: "b", partition: 0 },
            { topic: "nope", partition: 0 },
          ],
        },
      ],
    })) as any;
    expect(m.results[0].partitions.map((p: any) => p.errorCode)).toEqual([
      "NONE",
      "UNKNOWN_TOPIC_OR_PARTITION",
    ]);
    const stale = (await markers({
      markers: [
        {
          producerId: "11",
          producerEpoch: 0,
          controlType: "ABORT",
          coordinatorEpoch: 2,
          partitions: [{ topic: "b", partition: 0 }],
        },
      ],
    })) as any;
    expect(stale.results[0].partitions[0].errorCode).toBe("TRANSACTION_COORDINATOR_FENCED");
    const f = (await fetch({
      isolationLevel: "READ_COMMITTED",
      partitions: [{ topic: "b", partition: 0, fetchOffset: "0" }],
    })) as any;
    expect(
      f.partitions[0].batches.flatMap((b: any) => b.records.map((x: any) => x.offset)),
    ).toEqual(["0", "1"]);
    expect(f.partitions[0].nextFetchOffset).toBe("3");
  });

  it("a transactions-V2 producer's first batch asks the coordinator to add the partition", async () => {
    verifierAnswer = "NONE";
    const before = verifierCalls.length;
    const added = (await produce({
      transactionalId: "tx2",
      addPartitionsToTxn: true,
      partitions: [
        {
          topic: "b",
          partition: 0,
          batch: {
            producerId: "12",
            producerEpoch: 0,
            baseSequence: 0,
            isTransactional: true,
            records: [rec("v2")],
          },
        },
      ],
    })) as any;
    expect(added.partitions[0].errorCode).toBe("NONE");
    expect(verifierCalls.slice(before)).toEqual(["tx2:12:0:b/0:add"]);
  });

  it("long-polls: times out when idle, wakes on append, answers OFFSET_OUT_OF_RANGE past the end", async () => {
    // The long poll's deadline and timer run on a manual clock: the idle wait is exactly
    // maxWaitMs of virtual time, and the woken one ends with its timer unfired.
    const clock = new ManualClock();
    const longPoll = decoding(
      acceptsPartial(
        createFetchHandler(new PartitionService({ directory, verifier, logger, clock })),
      ),
    );
    const hw = (
      (await listOffsets({ partitions: [{ topic: "a", partition: 0, timestampMs: "-1" }] })) as any
    ).partitions[0].offset;
    const t0 = clock.monotonicMs();
    const idle = (await drive(
      clock,
      longPoll({ maxWaitMs: 300, partitions: [{ topic: "a", partition: 0, fetchOffset: hw }] }),
    )) as any;
    expect(clock.monotonicMs() - t0).toBe(300);
    expect(idle.partitions[0]).toMatchObject({
      errorCode: "NONE",
      batches: [],
      nextFetchOffset: hw,
    });
    const t1 = clock.monotonicMs();
    const waiting = longPoll({
      maxWaitMs: 10_000,
      partitions: [{ topic: "a", partition: 0, fetchOffset: hw }],
    }) as Promise<any>;
    await runUntil(clock, "the fetch to wait for an append", () => clock.nextDueMs() !== undefined);
    await produce({
      partitions: [
        { topic: "a", partition: 0, batch: { producerId: "-1", records: [rec("wake")] } },
      ],
    });
    const woke = await waiting;
    expect(clock.monotonicMs() - t1).toBeLessThan(10_000);
    expect(clock.nextDueMs()).toBeUndefined();
    expect(woke.partitions[0].batches[0].records[0].offset).toBe(hw);
    const far = (await fetch({
      partitions: [{ topic: "a", partition: 0, fetchOffset: "999" }],
    })) as any;
    expect(far.partitions[0].errorCode).toBe("OFFSET_OUT_OF_RANGE");
  });

  it("answers a fetch past the high watermark with a retriable code when the read barrier fails, OFFSET_OUT_OF_RANGE once it succeeds", async () => {
    // A leader that cannot confirm it has applied everything committed (the barrier timed out or
    // it lost leadership) does not know the offset is out of range: the consumer must retry.
    let barrier: () => Promise<void> = () =>
      Promise.reject(
        new TernError("REQUEST_TIMED_OUT", "read barrier on c/0 not confirmed in time"),
      );
    const group = {
      isLeader: () => true,
      leader: () => 7,
      readBarrier: () => barrier(),
    } as unknown as RaftGroup;
    partitions.set("c/0", new LocalPartition("c", 0, group, partitionForTest("c", 0)));
    try {
      const unconfirmed = (await fetch({
        partitions: [{ topic: "c", partition: 0, fetchOffset: "5" }],
      })) as any;
      expect(unconfirmed.partitions[0]).toMatchObject({
        errorCode: "NOT_LEADER_OR_FOLLOWER",
        nextFetchOffset: "5",
        leader: { nodeId: 7, address: "127.0.0.1:7777" },
      });
      barrier = () =>
        Promise.reject(
          new TernError("NOT_LEADER_OR_FOLLOWER", "leadership lost before the read was confirmed", {
            leader: -1,
          }),
        );
      const lost = (await fetch({
        partitions: [{ topic: "c", partition: 0, fetchOffset: "5" }],
      })) as any;
      expect(lost.partitions[0].errorCode).toBe("NOT_LEADER_OR_FOLLOWER");
      barrier = () => Promise.resolve();
      const confirmed = (await fetch({
        partitions: [{ topic: "c", partition: 0, fetchOffset: "5" }],
      })) as any;
      expect(confirmed.partitions[0].errorCode).toBe("OFFSET_OUT_OF_RANGE");
    } finally {
      partitions.delete("c/0");
    }
  });

  it("keeps a fetch of many tiny batches within max_bytes on the wire, as the gRPC message bound assumes", async () => {
    const sm = partitionForTest("w", 0);
    const group = await host.openGroup({ groupId: "w/0", initialVoters: [0], stateMachine: sm });
    partitions.set("w/0", new LocalPartition("w", 0, group, sm));
    await until("leader of w/0", 20_000, () => group.isLeader() || undefined, { intervalMs: 20 });
    await Promise.all(
      Array.from({ length: 300 }, () =>
        produce({
          partitions: [
            { topic: "w", partition: 0, batch: { producerId: "-1", records: [rec("x")] } },
          ],
        }),
      ),
    );
    const types = loadTernProto().packageDefinition as unknown as Record<
      string,
      { serialize: (v: unknown) => Buffer }
    >;
    const encode = fetchResponseSerializer(
      types["tern.v1.FetchPartitionResult"]!.serialize,
      types["tern.v1.FetchResponse"]!.serialize,
    );
    const maxBytes = 4_000;
    const answer = (await fetch({
      maxBytes,
      partitions: [{ topic: "w", partition: 0, fetchOffset: "0", partitionMaxBytes: maxBytes }],
    })) as any;
    expect(answer.partitions[0].errorCode).toBe("NONE");
    expect(answer.partitions[0].batches.length).toBeGreaterThan(10);
    // Stored, such a batch is 21 bytes; on the wire about 55 (batch fields, record framing).
    expect(encode(answer).length).toBeLessThanOrEqual(maxBytes + 200);
  });
});

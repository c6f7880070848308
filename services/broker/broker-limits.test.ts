// The broker's limits against the one gRPC message bound and the Raft host's frames: the
// defaults agree, and a broker whose limits contradict each other refuses to start.
import { describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  checkLimitRelations,
  GRPC_MESSAGE_BYTES_MAX,
  LimitError,
  MiB,
} from "../../libs/common/limits.js";
import { silentLogger } from "../../libs/common/logger.js";
import { startService } from "../../libs/server/start-service.js";
import { StartupError } from "../../libs/server/startup-error.js";
import { compose } from "./compose.js";
import { DEFAULT_LIMITS, resolveLimits } from "../../libs/raft-host/limits.js";
import { assertBrokerLimits, BROKER_LIMITS, brokerLimitRelations } from "./broker-limits.js";

function brokenBy(run: () => void): string[] {
  try {
    run();
  } catch (e) {
    if (e instanceof LimitError) return [...e.broken];
    throw e;
  }
  return [];
}

describe("broker limits", () => {
  it("hold with the defaults: a default Fetch answer fits in one gRPC message, a largest batch in one Raft frame", () => {
    expect(brokerLimitRelations(DEFAULT_LIMITS).filter((r) => !r.holds)).toEqual([]);
    expect(() => assertBrokerLimits(resolveLimits({}))).not.toThrow();
    expect(BROKER_LIMITS.fetchBytesMaxDefault).toBeLessThanOrEqual(BROKER_LIMITS.fetchBytesMax);
    expect(BROKER_LIMITS.fetchBytesMax + BROKER_LIMITS.batchBytesMax).toBeLessThan(
      GRPC_MESSAGE_BYTES_MAX,
    );
    expect(DEFAULT_LIMITS.grpcMessageBytesMax).toBeLessThanOrEqual(GRPC_MESSAGE_BYTES_MAX);
  });

  it("refuse the old disagreement: a 50 MiB default Fetch answer with a 32 MiB message bound", () => {
    const broken = brokenBy(() =>
      checkLimitRelations(
        "broker",
        brokerLimitRelations(
          DEFAULT_LIMITS,
          { ...BROKER_LIMITS, fetchBytesMax: 50 * MiB },
          32 * MiB,
        ),
      ),
    );
    expect(broken).toHaveLength(1);
    expect(broken[0]).toMatch(
      /^the largest Fetch answer .* must be at most GRPC_MESSAGE_BYTES_MAX \(33554432\)$/,
    );
  });

  it("refuse a default above the clamp and a batch that no Raft frame carries", () => {
    expect(
      brokenBy(() =>
        assertBrokerLimits(DEFAULT_LIMITS, {
          ...BROKER_LIMITS,
          fetchBytesMaxDefault: BROKER_LIMITS.fetchBytesMax + 1,
        }),
      ),
    ).toEqual([
      `fetchBytesMaxDefault (${BROKER_LIMITS.fetchBytesMax + 1}) must be at most fetchBytesMax (${BROKER_LIMITS.fetchBytesMax})`,
    ]);
    const smallFrames = resolveLimits({ grpcMessageBytesMax: 2 * MiB, appendBytesMax: 1 * MiB });
    expect(brokenBy(() => assertBrokerLimits(smallFrames))).toEqual([
      expect.stringMatching(
        /^one largest batch entry in a Raft frame .* must be at most raft grpcMessageBytesMax \(2097152\)$/,
      ),
    ]);
  });

  it("refuse a Raft transport that would write frames larger than its peers accept (the old 512 MiB / 128 MiB)", () => {
    expect(brokenBy(() => resolveLimits({ grpcMessageBytesMax: 128 * MiB }))).toEqual([
      `grpcMessageBytesMax (${128 * MiB}) must be at most GRPC_MESSAGE_BYTES_MAX (what every peer accepts) (${GRPC_MESSAGE_BYTES_MAX})`,
    ]);
    expect(brokenBy(() => resolveLimits({ snapshotEntriesInterval: 2_000_000 }))).toEqual([
      "a log of snapshotEntriesInterval + compactionMarginEntries entries must open within logEntriesOnOpenMax",
    ]);
  });
});

describe("a broker whose limits contradict each other", () => {
  it("refuses to start with one line naming the broken relation, before opening anything", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "tern-broker-limits-"));
    process.env.TERN_BROKER_SNAPSHOT_ENTRIES = "2000000";
    try {
      const started = startService({
        role: "broker",
        compose,
        logger: silentLogger(),
        env: {},
        argv: [
          "--node-id",
          "0",
          "--listen",
          "127.0.0.1:0",
          "--metrics-listen",
          "127.0.0.1:0",
          "--data-dir",
          dataDir,
          "--controllers",
          "0@127.0.0.1:1",
        ],
      });
      await expect(started).rejects.toThrow(StartupError);
      await expect(started).rejects.toThrow(
        /^inconsistent raft-host limits: a log of snapshotEntriesInterval \+ compactionMarginEntries/,
      );
    } finally {
      delete process.env.TERN_BROKER_SNAPSHOT_ENTRIES;
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

// Rejects configurations whose limits are missing or nonsensical, with a message naming the
// field, so a bad deployment fails at start instead of misbehaving under load.
import type { RaftConfig } from "./types.js";

export class RaftConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RaftConfigError";
  }
}

/** Bounds chosen so that a typo (ms instead of ticks, bytes instead of KiB) is caught. */
const TICKS_MAX = 1_000_000;
const INFLIGHT_MAX = 1 << 16;

export function validateConfig(config: RaftConfig): void {
  const fail = (message: string): never => {
    throw new RaftConfigError(`invalid raft config: ${message}`);
  };
  const positiveInt = (name: keyof RaftConfig, max: number): void => {
    const v = config[name];
    if (typeof v !== "number" || !Number.isSafeInteger(v) || v <= 0)
      fail(`${name} must be a positive integer, got ${String(v)}`);
    if ((v as number) > max) fail(`${name} must be at most ${max}, got ${String(v)}`);
  };
  if (!Number.isSafeInteger(config.id) || config.id < 0)
    fail(`id must be a non-negative integer, got ${config.id}`);
  positiveInt("heartbeatTick", TICKS_MAX);
  positiveInt("electionTick", TICKS_MAX);
  if (config.electionTick <= config.heartbeatTick) {
    fail(
      `electionTick (${config.electionTick}) must be greater than heartbeatTick (${config.heartbeatTick})`,
    );
  }
  if (config.idleHeartbeatTick !== undefined) {
    const idle = config.idleHeartbeatTick;
    if (!Number.isSafeInteger(idle) || idle < config.heartbeatTick || idle >= config.electionTick) {
      fail(
        `idleHeartbeatTick (${String(idle)}) must be an integer in [heartbeatTick, electionTick) = [${config.heartbeatTick}, ${config.electionTick})`,
      );
    }
  }
  positiveInt("maxSizePerMsg", Number.MAX_SAFE_INTEGER);
  positiveInt("maxInflightMsgs", INFLIGHT_MAX);
  const inflightBytes = config.maxInflightBytes ?? 0;
  if (!Number.isSafeInteger(inflightBytes) || inflightBytes < 0)
    fail(`maxInflightBytes must be a non-negative integer, got ${String(config.maxInflightBytes)}`);
  if (inflightBytes > 0 && inflightBytes < config.maxSizePerMsg)
    fail(
      `maxInflightBytes (${inflightBytes}) must be 0 or at least maxSizePerMsg (${config.maxSizePerMsg})`,
    );
  positiveInt("maxUncommittedEntriesSize", Number.MAX_SAFE_INTEGER);
  positiveInt("maxCommittedSizePerReady", Number.MAX_SAFE_INTEGER);
  if (config.maxUncommittedEntriesSize < config.maxSizePerMsg) {
    fail(
      `maxUncommittedEntriesSize (${config.maxUncommittedEntriesSize}) must be at least maxSizePerMsg (${config.maxSizePerMsg})`,
    );
  }
  if (typeof config.preVote !== "boolean") fail("preVote must be a boolean");
  if (typeof config.checkQuorum !== "boolean") fail("checkQuorum must be a boolean");
  if (config.quiesce !== undefined && typeof config.quiesce !== "boolean")
    fail("quiesce must be a boolean");
  if (!Number.isSafeInteger(config.applied) || config.applied < 0)
    fail(`applied must be a non-negative integer, got ${config.applied}`);
}

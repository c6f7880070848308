// Keeps one broker or coordinator registered with the controller: registers with a fresh
// incarnation, heartbeats every heartbeatIntervalMs, registers again when the controller no
// longer knows it (UNKNOWN_NODE), and keeps retrying (with backoff) while another live
// incarnation holds the id (DUPLICATE_BROKER_REGISTRATION: the old process's lease must run out).
// The incarnation is kept in the node's data directory: a process restarted from the same disk
// is the same node and re-registers at once, while a second process with another disk that
// claims a live node id is refused.
import { randomUUID } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { isTernError } from "../common/errors.js";
import type { Logger } from "../common/logger.js";
import type { RandomSource } from "../runtime/random-source.js";
import type { Scheduler, TimerHandle } from "../runtime/scheduler.js";
import { backoffMs, type ControllerClient } from "./controller-client.js";
import type { Role } from "./types.js";

export interface NodeMembershipOptions {
  readonly client: ControllerClient;
  readonly nodeId: number;
  readonly role: Role;
  readonly address: string;
  readonly rack?: string | undefined;
  /** HOST:PORT of this node's Kafka protocol listener, registered beside its gRPC address. */
  readonly kafkaAddress?: string | undefined;
  readonly logger: Logger;
  readonly heartbeatIntervalMs: number;
  /** Where the incarnation is kept across restarts; without it every start is a new incarnation. */
  readonly dataDir?: string;
  /** Called on every change between registered and not registered. */
  readonly onRegistered?: (registered: boolean) => void;
  /** The heartbeat and retry timers (the process runtime's). */
  readonly scheduler: Scheduler;
  /** The retry backoff's jitter (the process runtime's). */
  readonly random: RandomSource;
}

export interface NodeMembership {
  stop(): void;
  incarnation(): string;
  /** True between a successful registration and the next refused heartbeat. */
  registered(): boolean;
}

export function startNodeMembership(options: NodeMembershipOptions): NodeMembership {
  const { client, nodeId, role, address, rack, kafkaAddress, logger, heartbeatIntervalMs } =
    options;
  const incarnation =
    options.dataDir === undefined ? randomUUID() : loadIncarnation(options.dataDir);
  let stopped = false;
  let registered = false;
  let failures = 0;
  let timer: TimerHandle | undefined;
  const { scheduler, random } = options;

  const setRegistered = (value: boolean): void => {
    if (registered === value) return;
    registered = value;
    options.onRegistered?.(value);
  };
  const schedule = (delayMs: number): void => {
    if (stopped) return;
    timer = scheduler.setTimeout(() => void step(), delayMs);
  };
  const step = async (): Promise<void> => {
    try {
      if (!registered) {
        await client.registerNode({
          nodeId,
          role,
          address,
          incarnation,
          ...(rack ? { rack } : {}),
          ...(kafkaAddress ? { kafkaAddress } : {}),
        });
        logger.info({ nodeId, role, incarnation }, "registered with the controller");
        setRegistered(true);
      } else {
        await client.heartbeat({ nodeId, role, incarnation });
      }
      failures = 0;
      schedule(heartbeatIntervalMs);
    } catch (e) {
      failures += 1;
      if (isTernError(e, "UNKNOWN_NODE")) {
        logger.warn(
          { nodeId, role },
          "the controller no longer knows this node; registering again",
        );
        setRegistered(false);
        schedule(0);
        return;
      }
      if (isTernError(e, "DUPLICATE_BROKER_REGISTRATION")) {
        logger.warn(
          { nodeId, role, err: e.message },
          "another live process holds this node id; waiting for its lease to expire",
        );
      } else {
        logger.warn(
          { nodeId, role, err: (e as Error).message },
          "controller heartbeat/registration failed; retrying",
        );
      }
      schedule(Math.min(heartbeatIntervalMs, backoffMs(failures, random)));
    }
  };
  schedule(0);
  return {
    stop: () => {
      stopped = true;
      scheduler.clearTimeout(timer);
    },
    incarnation: () => incarnation,
    registered: () => registered,
  };
}

const INCARNATION_FILE = "incarnation";

/** Reads this data directory's incarnation, creating it (atomically) on first start. */
export function loadIncarnation(dataDir: string): string {
  const path = join(dataDir, INCARNATION_FILE);
  try {
    const value = readFileSync(path, "utf8").trim();
    if (/^[0-9a-f-]{36}$/.test(value)) return value;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
  }
  const value = randomUUID();
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  writeFileSync(`${path}.tmp`, `${value}\n`);
  renameSync(`${path}.tmp`, path);
  return value;
}

// Keeps one broker or coordinator registered with the controller: registers with a fresh
// incarnation, heartbeats every heartbeatIntervalMs, registers again when the controller no
// longer knows it (UNKNOWN_NODE), and keeps retrying (with backoff) while another live
// incarnation holds the id (DUPLICATE_BROKER_REGISTRATION: the old process's lease must run out).
import { randomUUID } from "node:crypto";
import { isTernError } from "../common/errors.js";
import type { Logger } from "../common/logger.js";
import { backoffMs, type ControllerClient } from "./controller-client.js";
import type { Role } from "./types.js";

export interface NodeMembershipOptions {
  readonly client: ControllerClient;
  readonly nodeId: number;
  readonly role: Role;
  readonly address: string;
  readonly rack?: string | undefined;
  readonly logger: Logger;
  readonly heartbeatIntervalMs: number;
  /** Called on every change between registered and not registered. */
  readonly onRegistered?: (registered: boolean) => void;
}

export interface NodeMembership {
  stop(): void;
  incarnation(): string;
  /** True between a successful registration and the next refused heartbeat. */
  registered(): boolean;
}

export function startNodeMembership(options: NodeMembershipOptions): NodeMembership {
  const { client, nodeId, role, address, rack, logger, heartbeatIntervalMs } = options;
  const incarnation = randomUUID();
  let stopped = false;
  let registered = false;
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;

  const setRegistered = (value: boolean): void => {
    if (registered === value) return;
    registered = value;
    options.onRegistered?.(value);
  };
  const schedule = (delayMs: number): void => {
    if (stopped) return;
    timer = setTimeout(() => void step(), delayMs);
    timer.unref();
  };
  const step = async (): Promise<void> => {
    try {
      if (!registered) {
        await client.registerNode({ nodeId, role, address, incarnation, ...(rack ? { rack } : {}) });
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
        logger.warn({ nodeId, role }, "the controller no longer knows this node; registering again");
        setRegistered(false);
        schedule(0);
        return;
      }
      if (isTernError(e, "DUPLICATE_BROKER_REGISTRATION")) {
        logger.warn({ nodeId, role, err: e.message }, "another live process holds this node id; waiting for its lease to expire");
      } else {
        logger.warn({ nodeId, role, err: (e as Error).message }, "controller heartbeat/registration failed; retrying");
      }
      schedule(Math.min(heartbeatIntervalMs, backoffMs(failures)));
    }
  };
  schedule(0);
  return {
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
    incarnation: () => incarnation,
    registered: () => registered,
  };
}

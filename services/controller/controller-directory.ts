// The blank-disk rule for the controller quorum (docs/controller.md, "A node that lost its
// disk"). Every controller records the id of the data directory it runs with in the replicated
// state (KIP-853's voter directory id). A controller whose data directory is blank asks its
// peers (DescribeCluster) before it opens the __controller group: if one of them lists it as a
// voter with a recorded directory id, it lost its disk, and it refuses to start: as a blank
// voter it would forget its vote and the entries it acknowledged. No record means it never ran
// with a directory (a first start, or a late starter of the initial quorum): it may start.
import * as grpc from "@grpc/grpc-js";
import type { PeerAddress } from "../../libs/common/config.js";
import type { Logger } from "../../libs/common/logger.js";
import { sleep } from "../../libs/runtime/sleep.js";
import type { Scheduler, SchedulingClock } from "../../libs/runtime/scheduler.js";
import type { ControllerQuorumStatus } from "../../libs/metadata/controller-client.js";

/** How long a blank controller waits for peers that do not answer at all (not started yet). */
export const BLANK_CONTROLLER_CHECK_MS = 5_000;
const POLL_MS = 250;
/** Bound on the attempts to record this controller's directory id (one per RECORD_RETRY_MS). */
const RECORD_ATTEMPTS_MAX = 600;
const RECORD_RETRY_MS = 1_000;

/** What one peer said: its view, "starting" (serving, but not the Controller service yet), or nothing. */
export type PeerAnswer =
  | { readonly kind: "status"; readonly status: ControllerQuorumStatus }
  | { readonly kind: "starting" }
  | { readonly kind: "unreachable" };

export type BlankVerdict =
  | { readonly kind: "refuse"; readonly message: string }
  | { readonly kind: "start" }
  | { readonly kind: "wait" };

/** The decision over the peers' answers so far (pure). */
export function blankControllerVerdict(
  nodeId: number,
  dataDir: string,
  answers: ReadonlyMap<number, PeerAnswer>,
): BlankVerdict {
  for (const [peer, answer] of answers) {
    if (answer.kind !== "status") continue;
    const me = answer.status.voters.find((v) => v.nodeId === nodeId);
    if (me?.voter === true && me.directoryId !== "") {
      return {
        kind: "refuse",
        message:
          `controller ${nodeId} has a blank data directory (${dataDir}) but controller ${peer} lists it as a voter of the __controller group that ran with data directory ${me.directoryId}: ` +
          "it lost its disk, and rejoining as that voter could lose committed metadata. Refusing to start. " +
          `Restore the disk, or remove it from the quorum (RemoveController ${nodeId}), start it again and add it back (AddController), see docs/controller.md`,
      };
    }
  }
  return [...answers.values()].every((a) => a.kind !== "unreachable")
    ? { kind: "start" }
    : { kind: "wait" };
}

/**
 * Polls every peer until the verdict is "start" or "refuse", or until `timeoutMs` (peers that
 * never answered: start, with a warning, since a first start of a quorum looks the same).
 * Returns the refusal message, or undefined when the controller may start.
 */
export async function checkBlankControllerRejoin(options: {
  readonly nodeId: number;
  readonly dataDir: string;
  readonly peers: readonly PeerAddress[];
  readonly describe: (peerId: number) => Promise<ControllerQuorumStatus>;
  readonly logger: Logger;
  /** The check's deadline and its pauses (the process runtime's). */
  readonly clock: SchedulingClock;
  readonly timeoutMs?: number;
}): Promise<string | undefined> {
  const peers = options.peers.filter((p) => p.id !== options.nodeId);
  const answers = new Map<number, PeerAnswer>(peers.map((p) => [p.id, { kind: "unreachable" }]));
  const deadline = options.clock.monotonicMs() + (options.timeoutMs ?? BLANK_CONTROLLER_CHECK_MS);
  for (;;) {
    await Promise.all(
      peers
        .filter((p) => answers.get(p.id)?.kind !== "status")
        .map(async (p) => {
          try {
            answers.set(p.id, { kind: "status", status: await options.describe(p.id) });
          } catch (e) {
            const code = (e as grpc.ServiceError).code;
            answers.set(
              p.id,
              code === grpc.status.UNIMPLEMENTED ? { kind: "starting" } : { kind: "unreachable" },
            );
          }
        }),
    );
    const verdict = blankControllerVerdict(options.nodeId, options.dataDir, answers);
    if (verdict.kind === "refuse") return verdict.message;
    if (verdict.kind === "start") return undefined;
    if (options.clock.monotonicMs() >= deadline) {
      const silent = [...answers].filter(([, a]) => a.kind === "unreachable").map(([id]) => id);
      options.logger.warn(
        { silent },
        "blank data directory: some controllers did not answer; starting (a first start of the quorum looks the same)",
      );
      return undefined;
    }
    await sleep(options.clock, POLL_MS);
  }
}

/**
 * Records this controller's directory id once the group has a leader (bounded attempts). A
 * different id already recorded means this directory is not the one the controller voted with:
 * logged as an error (the blank-disk check could not see it: no peer answered at start).
 */
export function recordDirectoryInBackground(options: {
  readonly nodeId: number;
  readonly directoryId: string;
  readonly recorded: () => string | undefined;
  readonly record: () => Promise<void>;
  readonly logger: Logger;
  /** The pauses between attempts (the process runtime's). */
  readonly scheduler: Scheduler;
}): () => void {
  let stopped = false;
  void (async () => {
    for (let attempt = 0; attempt < RECORD_ATTEMPTS_MAX && !stopped; attempt++) {
      const current = options.recorded();
      if (current === options.directoryId) return;
      if (current !== undefined) {
        options.logger.error(
          { recorded: current, directoryId: options.directoryId },
          `controller ${options.nodeId} is recorded with data directory ${current}, but runs with ${options.directoryId}: its data directory is not the one it voted with (lost or replaced disk); remove it from the quorum and add it back`,
        );
        return;
      }
      try {
        await options.record();
        options.logger.info(
          { directoryId: options.directoryId },
          "data directory id recorded in the controller quorum",
        );
        return;
      } catch (e) {
        // Retried (the Controller service may not be serving yet anywhere); a refusal because
        // another id is recorded shows in the replicated state, checked at the top.
        options.logger.debug(
          { err: e, attempt },
          "recording the data directory id failed; retrying",
        );
      }
      await sleep(options.scheduler, RECORD_RETRY_MS);
    }
  })();
  return () => {
    stopped = true;
  };
}

// The blank-disk rule for brokers and coordinators (docs/controller.md, "A node that lost its
// disk"): a node whose data directory is blank must not open, as a voter with an empty log,
// the partition groups the controller's metadata still lists it as a replica of. Its old copy
// may have been part of the majority that committed entries the other replicas lack, and a
// blank voter forgets whom it voted for. Such a node refuses to start; once the controller has
// re-placed its replicas (it is dead after the lease, re-placed after
// TERN_REPLACE_DEAD_AFTER_MS when a live node is free), it starts as a fresh node.
import { TernError } from "../common/errors.js";
import type { Clock } from "../runtime/clock.js";
import type { Scheduler } from "../runtime/scheduler.js";
import { sleep } from "../runtime/sleep.js";
import type { ServiceContext } from "../server/service.js";
import { StartupError } from "../server/startup-error.js";
import { partitionsHostedBy } from "./lookup.js";
import type { ClusterMetadata, Role } from "./types.js";

/** How long a blank node waits for a controller's answer before it refuses to start. */
export const BLANK_CHECK_TIMEOUT_MS = 60_000;

/** Partitions named in a refusal, at most (the count is always given). */
const NAMED_MAX = 10;
const RETRY_MS = 500;

/** The refusal for a blank node that metadata lists as a replica; undefined when it may start. */
export function blankReplicaRefusal(
  m: ClusterMetadata,
  role: Role,
  nodeId: number,
  dataDir: string,
): string | undefined {
  const held = partitionsHostedBy(m, role, nodeId);
  if (held.length === 0) return undefined;
  const names = held
    .slice(0, NAMED_MAX)
    .map((p) => `${p.topic}/${p.partition}`)
    .join(", ");
  const more = held.length > NAMED_MAX ? ` and ${held.length - NAMED_MAX} more` : "";
  return (
    `${role} ${nodeId} has a blank data directory (${dataDir}) but the cluster metadata lists it as a replica of ${held.length} partition(s) (${names}${more}): ` +
    "it lost its disk, and rejoining those Raft groups as a voter with an empty log could lose committed records. " +
    "Refusing to start. Restore the disk, or leave this node down until the controller has moved its replicas " +
    "to other live nodes (after TERN_REPLACE_DEAD_AFTER_MS; needs a free live node of the role), or start it under a new node id"
  );
}

/**
 * Reads the controllers' linearizable view (bounded: retries until `timeoutMs`) and throws the
 * refusal when the blank node is still listed as a replica. Throws too when no controller
 * answers in time: a blank node cannot tell a first start from a lost disk without one.
 */
export async function checkBlankReplicaRejoin(options: {
  readonly metadata: () => Promise<ClusterMetadata>;
  readonly role: Role;
  readonly nodeId: number;
  readonly dataDir: string;
  readonly timeoutMs: number;
  readonly refuse: (message: string) => Error;
  /** The process runtime's clock: the bound and the pause between tries. */
  readonly clock: Clock & Scheduler;
}): Promise<void> {
  const { clock } = options;
  const deadline = clock.monotonicMs() + options.timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const m = await options.metadata();
      const refusal = blankReplicaRefusal(m, options.role, options.nodeId, options.dataDir);
      if (refusal !== undefined) throw options.refuse(refusal);
      return;
    } catch (e) {
      if (!(e instanceof TernError)) throw e;
      last = e;
    }
    if (clock.monotonicMs() >= deadline) break;
    await sleep(clock, RETRY_MS);
  }
  throw options.refuse(
    `${options.role} ${options.nodeId} has a blank data directory (${options.dataDir}) and no controller answered within ${options.timeoutMs} ms (${String(last)}): ` +
      "cannot tell a first start from a lost disk, refusing to start (it will be retried on the next start)",
  );
}

/**
 * A broker's or coordinator's first step (the node runtime's): a blank data directory is
 * checked against the controllers' linearizable metadata (refusing with a StartupError), then
 * claimed; any other directory is left as it is.
 */
export async function claimDataDir(
  ctx: ServiceContext,
  role: Role,
  metadata: () => Promise<ClusterMetadata>,
  timeoutMs = BLANK_CHECK_TIMEOUT_MS,
): Promise<void> {
  const dir = ctx.dataDir;
  if (dir === undefined) return;
  if (dir.blank) {
    await checkBlankReplicaRejoin({
      metadata,
      role,
      nodeId: ctx.config.nodeId,
      dataDir: dir.path,
      timeoutMs,
      refuse: (message) => new StartupError(message),
      clock: ctx.runtime.clock,
    });
    ctx.logger.info(
      { dataDir: dir.path, directoryId: dir.directoryId },
      "blank data directory claimed: this node holds no replica in the cluster metadata",
    );
  }
  dir.claim();
}

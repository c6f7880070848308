// The limits that cross a process boundary, defined once. A sender and a receiver built from
// different numbers fail at run time, and only with large messages (a Fetch answer the server
// cannot send, a Raft frame the peer refuses, which breaks the stream for every group on it),
// so every other bound that must fit into a message is derived from these, and each library
// states its relations with checkLimitRelations (asserted when a process starts).

export const KiB = 1024;
export const MiB = 1024 * KiB;

/**
 * The largest gRPC message every tern server and channel sends and accepts (Raft peers, brokers,
 * coordinators, controllers and the TypeScript client alike): one Produce request, one Fetch
 * answer, one Raft frame, one snapshot chunk. Kafka's socket.request.max.bytes: room for a
 * 50 MiB Fetch answer (Kafka's fetch.max.bytes) with 10,000 partitions in it.
 */
export const GRPC_MESSAGE_BYTES_MAX = 100 * MiB;

/** HTTP/2 flow-control window of the process's server and of client channels (the 64 KiB default caps throughput). */
export const GRPC_FLOW_CONTROL_WINDOW_BYTES = 16 * MiB;

/** A relation between limits that must hold, and what breaks when it does not. */
export interface LimitRelation {
  readonly holds: boolean;
  readonly what: string;
}

/** Some limits contradict each other: the process must not start. */
export class LimitError extends Error {
  constructor(
    readonly broken: readonly string[],
    owner: string,
  ) {
    super(`inconsistent ${owner} limits: ${broken.join("; ")}`);
    this.name = "LimitError";
  }
}

/** Throws one LimitError naming every broken relation. */
export function checkLimitRelations(owner: string, relations: readonly LimitRelation[]): void {
  const broken = relations.filter((r) => !r.holds).map((r) => r.what);
  if (broken.length > 0) throw new LimitError(broken, owner);
}

/** `a` (named) is at most `b` (named), in a sentence that gives both values. */
export function atMost(aName: string, a: number, bName: string, b: number): LimitRelation {
  return { holds: a <= b, what: `${aName} (${a}) must be at most ${bName} (${b})` };
}

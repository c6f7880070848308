// Pending read-index requests at the leader. Each records the commit index when it arrived; it
// is safe to answer once a quorum acknowledged a heartbeat carrying its context (proving this
// node was still leader after the request arrived).
import type { NodeId } from "./types.js";

export interface ReadIndexRequest {
  readonly index: number;
  /** Who asked: this node (answered as a ReadState) or a follower (answered by message). */
  readonly from: NodeId;
  readonly context: Uint8Array;
  readonly acks: Set<NodeId>;
}

/** Limit on requests awaiting confirmation; beyond it new requests are dropped (the host times out). */
export const READ_INDEX_PENDING_MAX = 4096;
/** Limit on a read-index context, so a heartbeat stays small. */
export const READ_INDEX_CONTEXT_BYTES_MAX = 256;

export function contextKey(context: Uint8Array): string {
  let key = "";
  for (let i = 0; i < context.byteLength; i++) key += String.fromCharCode(context[i]!);
  return key;
}

export class ReadOnly {
  private readonly pending = new Map<string, ReadIndexRequest>();
  private queue: string[] = [];

  size(): number {
    return this.queue.length;
  }

  /** False when full or when the context is already pending (duplicate request). */
  add(index: number, from: NodeId, context: Uint8Array): boolean {
    const key = contextKey(context);
    if (this.pending.has(key) || this.queue.length >= READ_INDEX_PENDING_MAX) return false;
    this.pending.set(key, { index, from, context, acks: new Set() });
    this.queue.push(key);
    return true;
  }

  /** Records an ack; returns the ack count for that request (0 when unknown). */
  recvAck(id: NodeId, context: Uint8Array): ReadIndexRequest | undefined {
    const req = this.pending.get(contextKey(context));
    if (req === undefined) return undefined;
    req.acks.add(id);
    return req;
  }

  /** Removes and returns every request up to and including the one with this context. */
  advance(context: Uint8Array): ReadIndexRequest[] {
    const key = contextKey(context);
    const at = this.queue.indexOf(key);
    if (at < 0) return [];
    const done = this.queue.slice(0, at + 1).map((k) => this.pending.get(k)!);
    for (const k of this.queue.slice(0, at + 1)) this.pending.delete(k);
    this.queue = this.queue.slice(at + 1);
    return done;
  }

  lastPendingContext(): Uint8Array | undefined {
    const key = this.queue[this.queue.length - 1];
    return key === undefined ? undefined : this.pending.get(key)!.context;
  }

  reset(): void {
    this.pending.clear();
    this.queue = [];
  }
}

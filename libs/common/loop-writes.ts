// Small file writes made on the event loop rather than by the libuv thread pool. A thread-pool
// write costs two thread hand-offs (a worker's wake-up, then the loop's), more than writing a
// few KiB; a busy process's larger batches still go to the thread pool, so its loop keeps
// reading and staging while they land. One bound and one wait for every such writer (the
// entry journal, segment files): docs/raft-performance.md, "Latency at 1 in flight".

/** Writes up to this size are made on the event loop (an O_DSYNC one: about an fdatasync). */
export const SYNC_WRITE_BYTES_MAX = 16 * 1024;

/**
 * Resolves in the next loop iteration. HTTP/2 sends what the current turn queued (a leader's
 * Appends, a Produce answer) from a native immediate, which runs before the next iteration's JS
 * immediates: waiting for this lets those leave before the loop blocks on a write.
 */
export function nextLoopIteration(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

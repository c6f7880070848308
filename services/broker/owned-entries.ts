// Entry buffers this broker encoded and proposed itself. On the leader the Raft log hands the
// very same buffer back to apply(), which can then keep it without copying: a fresh 64 KiB
// copy costs ~280 µs on this VM (16 first-touch page faults), the leader's largest per-entry
// cost in apply. Any other buffer (from the transport or the disk) is copied as before.
// Contract: nobody writes into a buffer after proposing it (the broker does not; the Raft
// log never mutates entry data).
const owned = new WeakSet<Uint8Array>();

/** Called with the exact buffer passed to propose(). */
export function markOwnedEntry(data: Uint8Array): void {
  owned.add(data);
}

/** True once for a buffer marked by markOwnedEntry: the caller may keep it as its own. */
export function takeOwnedEntry(data: Uint8Array): boolean {
  return owned.delete(data);
}

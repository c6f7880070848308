// Merges back-to-back Append messages of one Ready into one per follower. A leader's core sends
// one Append per proposal (each propose() broadcasts); a follower handed the merged message does
// exactly what it would do with the originals in a row (append the same contiguous entries,
// take the newer commit), and acknowledges once instead of once per proposal. The leader's
// flow-control window frees every in-flight message up to the acknowledged index.
import { MessageType, type Message } from "../raft/types.js";

/** Returns the messages with contiguous Appends to the same peer merged, bounded by bytesMax of entry data. */
export function coalesceAppends(
  messages: readonly Message[],
  bytesMax: number,
): readonly Message[] {
  if (messages.length < 2) return messages;
  const out: Message[] = [];
  const lastAppendTo = new Map<number, { at: number; bytes: number }>();
  for (const m of messages) {
    if (m.type !== MessageType.Append) {
      // Anything else to this peer ends the run: keep order relative to it.
      lastAppendTo.delete(m.to);
      out.push(m);
      continue;
    }
    const bytes = m.entries.reduce((s, e) => s + e.data.byteLength, 0);
    const previous = lastAppendTo.get(m.to);
    if (previous !== undefined) {
      const p = out[previous.at]!;
      const contiguous =
        p.term === m.term &&
        p.from === m.from &&
        p.entries.length > 0 &&
        m.index === p.index + p.entries.length &&
        m.logTerm === p.entries[p.entries.length - 1]!.term &&
        !p.reject &&
        !m.reject;
      if (contiguous && previous.bytes + bytes <= bytesMax) {
        out[previous.at] = {
          ...p,
          entries: [...p.entries, ...m.entries],
          commit: Math.max(p.commit, m.commit),
        };
        previous.bytes += bytes;
        continue;
      }
    }
    lastAppendTo.set(m.to, { at: out.length, bytes });
    out.push(m);
  }
  return out;
}

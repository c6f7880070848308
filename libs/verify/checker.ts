// Checks a recorded history (the chaos suite's, `tern verify`'s) for the anomalies Jepsen found
// in Kafka and Redpanda: every committed write visible exactly once at one offset, nothing
// aborted or uncommitted ever read, sends and polls monotonic per process, transactions never
// torn, no cycle of write-read dependencies between transactions (G1c). Pure: no I/O.
import { transform as demoTransform } from "../../scripts/demo/transform.js";
import type {
  Anomaly,
  AnomalyType,
  CheckResult,
  History,
  PollOp,
  SendOp,
  TxnOp,
} from "./history.js";

const EXAMPLES_PER_TYPE_MAX = 5;

interface Write {
  readonly txn: TxnOp;
  readonly send: SendOp;
}

class Findings {
  readonly counts: Partial<Record<AnomalyType, number>> = {};
  readonly examples: Anomaly[] = [];
  add(type: AnomalyType, message: string, details: Record<string, unknown> = {}): void {
    const n = (this.counts[type] ?? 0) + 1;
    this.counts[type] = n;
    if (n <= EXAMPLES_PER_TYPE_MAX) this.examples.push({ type, message, details });
  }
}

export function checkHistory(history: History): CheckResult {
  const findings = new Findings();
  const writes = indexWrites(history, findings);
  const committed = settleOutcomes(history, writes);
  checkOffsets(history, findings);
  checkReads(history, writes, committed, findings);
  checkFinalVisibility(history, writes, committed, findings);
  checkMonotonicSends(history, findings);
  checkMonotonicPolls(history, findings);
  checkPollTears(history, writes, findings);
  checkCopier(history, findings);
  checkMoney(history, findings);
  checkOffsetCommits(history, findings);
  checkWriteReadCycles(history, writes, committed, findings);
  const counts = {
    committed: history.txns.filter((t) => t.outcome === "ok").length,
    aborted: history.txns.filter((t) => t.outcome === "fail").length,
    unknown: history.txns.filter((t) => t.outcome === "unknown").length,
  };
  return {
    valid: findings.examples.length === 0,
    anomalies: findings.counts,
    examples: findings.examples,
    counts,
  };
}

const OUTCOME_RANK: Readonly<Record<TxnOp["outcome"], number>> = { ok: 2, unknown: 1, fail: 0 };

function indexWrites(history: History, findings: Findings): Map<string, Write> {
  const writes = new Map<string, Write>();
  for (const txn of history.txns) {
    for (const op of txn.ops) {
      if (op.f !== "send") continue;
      const prior = writes.get(op.value);
      if (!prior) writes.set(op.value, { txn, send: op });
      else if (!history.valuesMayRepeat)
        findings.add("duplicate", `value ${op.value} was sent twice by the workload`, {
          txns: [prior.txn.id, txn.id],
        });
      // The writer that may have committed owns a repeated value: ok, else unknown, else failed.
      else if (OUTCOME_RANK[txn.outcome] > OUTCOME_RANK[prior.txn.outcome])
        writes.set(op.value, { txn, send: op });
    }
  }
  return writes;
}

/** Unknown outcomes are settled by the final read: a transaction is committed iff any of its writes is visible. */
function settleOutcomes(history: History, writes: Map<string, Write>): Set<number> {
  const committed = new Set<number>(
    history.txns.filter((t) => t.outcome === "ok").map((t) => t.id),
  );
  for (const pairs of Object.values(history.finalReads)) {
    for (const [, value] of pairs) {
      const w = writes.get(value);
      if (w && w.txn.outcome === "unknown") committed.add(w.txn.id);
    }
  }
  return committed;
}

function* observations(
  history: History,
): Generator<{ key: string; offset: number; value: string; where: string }> {
  for (const txn of history.txns) {
    for (const op of txn.ops) {
      if (op.f === "send" && op.offset !== undefined && txn.outcome === "ok")
        yield { key: op.key, offset: op.offset, value: op.value, where: `send in txn ${txn.id}` };
      if (op.f === "poll")
        for (const [key, pairs] of Object.entries(op.reads))
          for (const [offset, value] of pairs)
            yield { key, offset, value, where: `poll in txn ${txn.id}` };
    }
  }
  for (const [key, pairs] of Object.entries(history.finalReads))
    for (const [offset, value] of pairs) yield { key, offset, value, where: "final read" };
}

function checkOffsets(history: History, findings: Findings): void {
  const valueAt = new Map<string, { value: string; where: string }>();
  const offsetOf = new Map<string, { key: string; offset: number; where: string }>();
  for (const o of observations(history)) {
    const slot = `${o.key}@${o.offset}`;
    const seen = valueAt.get(slot);
    if (seen === undefined) valueAt.set(slot, { value: o.value, where: o.where });
    else if (seen.value !== o.value) {
      findings.add(
        "inconsistent-offsets",
        `${o.key} offset ${o.offset} holds ${seen.value} (${seen.where}) and ${o.value} (${o.where})`,
        { key: o.key, offset: o.offset },
      );
    }
    const at = offsetOf.get(o.value);
    if (at === undefined) offsetOf.set(o.value, { key: o.key, offset: o.offset, where: o.where });
    else if (at.key !== o.key || at.offset !== o.offset) {
      findings.add(
        "duplicate",
        `value ${o.value} appears at ${at.key}@${at.offset} (${at.where}) and ${o.key}@${o.offset} (${o.where})`,
        { value: o.value },
      );
      offsetOf.set(o.value, { key: o.key, offset: o.offset, where: o.where });
    }
  }
}

function checkReads(
  history: History,
  writes: Map<string, Write>,
  committed: Set<number>,
  findings: Findings,
): void {
  const reported = new Set<string>();
  for (const reader of history.txns) {
    for (const op of reader.ops) {
      if (op.f !== "poll") continue;
      for (const [key, pairs] of Object.entries(op.reads)) {
        for (const [offset, value] of pairs) {
          const w = writes.get(value);
          if (!w || w.txn.id === reader.id || reported.has(value)) continue;
          if (!committed.has(w.txn.id)) {
            reported.add(value);
            findings.add(
              "aborted-read",
              `txn ${reader.id} read ${value} at ${key}@${offset}, written by txn ${w.txn.id} which did not commit`,
              { reader: reader.id, writer: w.txn.id },
            );
          } else if (reader.completedMs < w.txn.invokedMs) {
            reported.add(value);
            findings.add(
              "dirty-read",
              `txn ${reader.id} read ${value} before its writer txn ${w.txn.id} had even begun`,
              { reader: reader.id, writer: w.txn.id },
            );
          }
        }
      }
    }
  }
  for (const [key, pairs] of Object.entries(history.finalReads)) {
    for (const [offset, value] of pairs) {
      const w = writes.get(value);
      if (w && w.txn.outcome === "fail")
        findings.add(
          "aborted-read",
          `final read saw ${value} at ${key}@${offset} from aborted txn ${w.txn.id}`,
          { writer: w.txn.id },
        );
    }
  }
}

function checkFinalVisibility(
  history: History,
  writes: Map<string, Write>,
  committed: Set<number>,
  findings: Findings,
): void {
  const visible = new Map<string, number>();
  const maxOffset = new Map<string, number>();
  for (const [key, pairs] of Object.entries(history.finalReads)) {
    for (const [offset, value] of pairs) {
      visible.set(value, offset);
      maxOffset.set(key, Math.max(maxOffset.get(key) ?? -1, offset));
    }
  }
  const byTxn = new Map<number, { seen: string[]; missing: string[] }>();
  for (const [value, w] of writes) {
    const entry = byTxn.get(w.txn.id) ?? { seen: [], missing: [] };
    (visible.has(value) ? entry.seen : entry.missing).push(value);
    byTxn.set(w.txn.id, entry);
    if (w.txn.outcome !== "ok" || visible.has(value)) continue;
    const offset = w.send.offset;
    if (offset !== undefined && (maxOffset.get(w.send.key) ?? -1) > offset) {
      findings.add(
        "lost-write",
        `committed ${value} at ${w.send.key}@${offset} is missing though later offsets are visible`,
        { txn: w.txn.id },
      );
    } else {
      findings.add(
        "unseen",
        `committed ${value} on ${w.send.key} was never seen by the final read`,
        { txn: w.txn.id },
      );
    }
  }
  for (const [txnId, { seen, missing }] of byTxn) {
    if (seen.length > 0 && missing.length > 0 && committed.has(txnId)) {
      findings.add(
        "torn-transaction",
        `txn ${txnId} is partly visible: ${seen.length} writes seen, ${missing.length} missing`,
        { txn: txnId, missing: missing.slice(0, 5) },
      );
    }
  }
}

function checkMonotonicSends(history: History, findings: Findings): void {
  const last = new Map<string, number>();
  const ordered = [...history.txns]
    .filter((t) => t.outcome === "ok")
    .sort((a, b) => a.completedMs - b.completedMs || a.id - b.id);
  for (const txn of ordered) {
    for (const op of txn.ops) {
      if (op.f !== "send" || op.offset === undefined) continue;
      const slot = `${txn.process}:${op.key}`;
      const prev = last.get(slot);
      if (prev !== undefined && op.offset <= prev) {
        findings.add(
          "non-monotonic-send",
          `process ${txn.process} sent to ${op.key} at offset ${op.offset} after ${prev}`,
          { txn: txn.id },
        );
      }
      last.set(slot, op.offset);
    }
  }
}

function checkMonotonicPolls(history: History, findings: Findings): void {
  const last = new Map<string, number>();
  // Only committed transactions: after an abort the consumer legitimately seeks back.
  const byProcess = [...history.txns]
    .filter((t) => t.outcome === "ok")
    .sort((a, b) => a.invokedMs - b.invokedMs || a.id - b.id);
  for (const txn of byProcess) {
    for (const op of txn.ops) {
      if (op.f !== "poll") continue;
      for (const [key, pairs] of Object.entries(op.reads)) {
        const slot = `${txn.process}:${key}`;
        for (const [offset] of pairs) {
          const prev = last.get(slot);
          if (prev !== undefined && offset <= prev) {
            findings.add(
              "non-monotonic-poll",
              `process ${txn.process} polled ${key}@${offset} after ${key}@${prev}`,
              { txn: txn.id },
            );
          }
          last.set(slot, offset);
        }
      }
    }
  }
}

/** A poll that returns some of a transaction's writes on a key must return all of them in the range it covered. */
function checkPollTears(history: History, writes: Map<string, Write>, findings: Findings): void {
  for (const reader of history.txns) {
    for (const op of reader.ops) {
      if (op.f !== "poll") continue;
      checkOnePollTear(reader, op, writes, findings);
    }
  }
}

function checkOnePollTear(
  reader: TxnOp,
  op: PollOp,
  writes: Map<string, Write>,
  findings: Findings,
): void {
  for (const [key, pairs] of Object.entries(op.reads)) {
    if (pairs.length === 0) continue;
    const lo = pairs[0]![0];
    const hi = pairs[pairs.length - 1]![0];
    const returned = new Set(pairs.map(([, v]) => v));
    const writers = new Set(
      pairs
        .map(([, v]) => writes.get(v)?.txn)
        .filter((t): t is TxnOp => t !== undefined && t.id !== reader.id),
    );
    for (const writer of writers) {
      for (const w of writer.ops) {
        if (w.f !== "send" || w.key !== key || w.offset === undefined) continue;
        if (w.offset >= lo && w.offset <= hi && !returned.has(w.value)) {
          findings.add(
            "torn-transaction",
            `txn ${reader.id} polled part of txn ${writer.id} on ${key}: ${w.value}@${w.offset} skipped`,
            { reader: reader.id, writer: writer.id },
          );
        }
      }
    }
  }
}

function checkCopier(history: History, findings: Findings): void {
  if (!history.copier) return;
  const counts = new Map<string, number>();
  for (const [key, pairs] of Object.entries(history.finalReads)) {
    if (!key.startsWith(history.copier.outputKeyPrefix)) continue;
    for (const [, value] of pairs) counts.set(value, (counts.get(value) ?? 0) + 1);
  }
  const output =
    history.copier.transform === "demo" ? demoTransform : (v: string): string => `${v}:copied`;
  for (const input of history.copier.inputValues) {
    const n = counts.get(output(input)) ?? 0;
    if (n !== 1)
      findings.add("copier-not-exactly-once", `input ${input} was copied ${n} times`, {
        input,
        copies: n,
      });
    counts.delete(output(input));
  }
  for (const [value, n] of counts)
    findings.add("copier-not-exactly-once", `output ${value} has no input (${n} copies)`, {
      value,
    });
}

function checkMoney(history: History, findings: Findings): void {
  if (!history.money) return;
  const total = Object.values(history.money.finalBalances).reduce((a, b) => a + b, 0);
  if (total !== history.money.expectedTotal) {
    findings.add(
      "money-not-conserved",
      `balances sum to ${total}, expected ${history.money.expectedTotal}`,
      { total, expected: history.money.expectedTotal },
    );
  }
}

function checkOffsetCommits(history: History, findings: Findings): void {
  for (const c of history.offsetCommits ?? []) {
    if (c.committedOffset !== c.lastPolledOffset + 1) {
      findings.add(
        "committed-offset-mismatch",
        `process ${c.process} committed ${c.committedOffset} for ${c.key} after polling up to ${c.lastPolledOffset}`,
        { ...c },
      );
    }
  }
}

/**
 * G1c (cyclic information flow), as Jepsen's Kafka checker finds it: an edge W -> R when R read a
 * value W wrote. Under read_committed R can only read W after W committed, and W committed
 * after all its own reads, so a cycle means some transaction saw a write that was not yet
 * committed. Write-write order (offsets) is left out: Kafka lets transactions interleave
 * differently on different partitions, so ww cycles are not anomalies of its model.
 */
function checkWriteReadCycles(
  history: History,
  writes: Map<string, Write>,
  committed: Set<number>,
  findings: Findings,
): void {
  const edges = new Map<number, Set<number>>();
  for (const reader of history.txns) {
    if (!committed.has(reader.id)) continue;
    for (const op of reader.ops) {
      if (op.f !== "poll") continue;
      for (const pairs of Object.values(op.reads)) {
        for (const [, value] of pairs) {
          const w = writes.get(value);
          if (!w || w.txn.id === reader.id || !committed.has(w.txn.id)) continue;
          const out = edges.get(w.txn.id) ?? new Set<number>();
          out.add(reader.id);
          edges.set(w.txn.id, out);
        }
      }
    }
  }
  for (const component of stronglyConnected(edges)) {
    if (component.length < 2) continue;
    findings.add(
      "g1c-cycle",
      `transactions ${component.slice(0, 8).join(", ")}${component.length > 8 ? ", …" : ""} each read another's writes in a cycle`,
      { txns: component.slice(0, 20) },
    );
  }
}

/** Tarjan's strongly connected components, iterative (histories hold many transactions). */
export function stronglyConnected(edges: ReadonlyMap<number, ReadonlySet<number>>): number[][] {
  const index = new Map<number, number>();
  const low = new Map<number, number>();
  const onStack = new Set<number>();
  const stack: number[] = [];
  const components: number[][] = [];
  let next = 0;
  const nodes = new Set<number>(edges.keys());
  for (const out of edges.values()) for (const n of out) nodes.add(n);
  for (const root of nodes) {
    if (index.has(root)) continue;
    const work: Array<{ node: number; children: number[]; i: number }> = [];
    const enter = (node: number): void => {
      index.set(node, next);
      low.set(node, next);
      next++;
      stack.push(node);
      onStack.add(node);
      work.push({ node, children: [...(edges.get(node) ?? [])], i: 0 });
    };
    enter(root);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      if (frame.i < frame.children.length) {
        const child = frame.children[frame.i++]!;
        if (!index.has(child)) enter(child);
        else if (onStack.has(child))
          low.set(frame.node, Math.min(low.get(frame.node)!, index.get(child)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: number[] = [];
        for (;;) {
          const n = stack.pop()!;
          onStack.delete(n);
          component.push(n);
          if (n === frame.node) break;
        }
        components.push(component.sort((a, b) => a - b));
      }
    }
  }
  return components;
}

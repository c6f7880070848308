// Where the Raft part of a 1-in-flight produce goes, from TERN_RAFT_TRACE output:
// `TERN_RAFT_TRACE=1 npm run bench -- produce --case 1-inflight --keep-data-dir`, then
// `node dist/scripts/bench/_raft-trace-steps.js <kept dir>`. Reads the `turn`, `write-start` and
// `write-landed` lines of the three brokers (logs/broker-N.log, wall-clock ms), follows each
// one-entry proposal from the leader's turn to its commit turn and prints p50 / p90 of each step
// (docs/raft-performance.md, "Latency at 1 in flight"). One partition, one entry per turn: the
// matching is by order, not by index, so other work on the brokers blurs it.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

interface TraceEvent {
  readonly node: number;
  readonly kind: string;
  readonly tMs: number;
  readonly fields: Readonly<Record<string, string>>;
}

/** How many later events one cycle's matching looks at (bounds the scan per proposal). */
const CYCLE_EVENTS_MAX = 200;
const BROKERS = [0, 1, 2];

/** The trace events of the three brokers' logs in the kept bench directory, by time. */
export function readTrace(dir: string): TraceEvent[] {
  return parseTrace(BROKERS.map((b) => readFileSync(join(dir, "logs", `broker-${b}.log`), "utf8")));
}

/** TRACE lines of any number of process logs (other lines skipped), merged by time. */
export function parseTrace(logs: readonly string[]): TraceEvent[] {
  const events: TraceEvent[] = [];
  for (const text of logs) {
    for (const line of text.split("\n")) {
      const m = /^TRACE (\d+) (\S+) t=([\d.]+)(.*)$/.exec(line);
      if (!m) continue;
      const fields = Object.fromEntries(
        [...m[4]!.matchAll(/(\w+)=(\S+)/g)].map((x) => [x[1]!, x[2]!]),
      );
      events.push({ node: Number(m[1]), kind: m[2]!, tMs: Number(m[3]), fields });
    }
  }
  return events.sort((a, b) => a.tMs - b.tMs);
}

/** Step name → one duration (ms) per proposal followed to its commit. */
export function traceSteps(events: readonly TraceEvent[]): Map<string, number[]> {
  const isProposalTurn = (e: TraceEvent): boolean =>
    e.kind === "turn" && e.fields.entries === "1" && e.fields.readies === "1";
  const proposalTurns = BROKERS.map(
    (b) => events.filter((e) => e.node === b && isProposalTurn(e)).length,
  );
  const leader = proposalTurns.indexOf(Math.max(...proposalTurns));
  const steps = new Map<string, number[]>();
  const push = (name: string, ms: number): void => {
    const list = steps.get(name) ?? [];
    list.push(ms);
    steps.set(name, list);
  };
  events.forEach((e, i) => {
    if (e.node !== leader || e.kind !== "turn" || e.fields.entries !== "1") return;
    const after = events.slice(i + 1, i + CYCLE_EVENTS_MAX);
    const next = (node: number, kind: string, fromMs: number): TraceEvent | undefined =>
      after.find((x) => x.node === node && x.kind === kind && x.tMs >= fromMs);
    const leaderStart = next(leader, "write-start", e.tMs);
    const leaderLanded = next(leader, "write-landed", e.tMs);
    const followerTurns = after.filter(
      (x) => x.node !== leader && x.kind === "turn" && x.fields.entries === "1",
    );
    if (followerTurns.length < 2 || !leaderStart || !leaderLanded) return;
    const firstTwo = followerTurns.slice(0, 2).map((t) => ({
      turn: t,
      start: next(t.node, "write-start", t.tMs),
      landed: next(t.node, "write-landed", t.tMs),
    }));
    if (firstTwo.some((f) => !f.start || !f.landed)) return;
    const fastest = firstTwo.reduce((a, b) => (a.landed!.tMs <= b.landed!.tMs ? a : b));
    const commit = after.find(
      (x) =>
        x.node === leader &&
        x.kind === "turn" &&
        x.fields.committed !== "0" &&
        x.tMs > fastest.landed!.tMs,
    );
    if (!commit) return;
    push("leader: proposal turn -> its write starts", leaderStart.tMs - e.tMs);
    push("leader: its write (one loop iteration + O_DSYNC)", leaderLanded.tMs - leaderStart.tMs);
    push(
      "leader turn -> first follower's turn",
      Math.min(...firstTwo.map((f) => f.turn.tMs)) - e.tMs,
    );
    push("fastest follower: turn -> write starts", fastest.start!.tMs - fastest.turn.tMs);
    push("fastest follower: its write", fastest.landed!.tMs - fastest.start!.tMs);
    push("fastest follower landed -> leader's commit turn", commit.tMs - fastest.landed!.tMs);
    push("leader: proposal turn -> commit turn", commit.tMs - e.tMs);
    push(
      "leader's write landed after the fastest follower's (share)",
      leaderLanded.tMs > fastest.landed!.tMs ? 1 : 0,
    );
    push("leader's write landed - fastest follower's", leaderLanded.tMs - fastest.landed!.tMs);
  });
  return steps;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted[Math.floor(((sorted.length - 1) * p) / 100)]!;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const dir = process.argv[2];
  if (!dir) {
    process.stderr.write("usage: node dist/scripts/bench/_raft-trace-steps.js <kept bench dir>\n");
    process.exit(2);
  }
  for (const [name, values] of traceSteps(readTrace(dir))) {
    const sorted = [...values].sort((a, b) => a - b);
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    process.stdout.write(
      `${name.padEnd(60)} n=${values.length} p50 ${percentile(sorted, 50).toFixed(2)} p90 ${percentile(sorted, 90).toFixed(2)} mean ${mean.toFixed(2)}\n`,
    );
  }
}

// Reads a process's Prometheus text from its metrics port into samples (bounded: one GET with
// a deadline), and names every tern_ metric a PromQL text mentions, for the monitoring tests.
export interface Sample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

const SCRAPE_TIMEOUT_MS = 5_000;

export async function scrape(metricsPort: number): Promise<Sample[]> {
  const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`, { signal: AbortSignal.timeout(SCRAPE_TIMEOUT_MS) });
  return parseExposition(await res.text());
}

export function parseExposition(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[3] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[4]) });
  }
  return out;
}

/** Sum of one metric's samples whose labels include `match`. */
export function sumOf(samples: readonly Sample[], name: string, match: Record<string, string> = {}): number {
  return samples.filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v)).reduce((a, s) => a + s.value, 0);
}

/** Every tern_ metric named in a PromQL expression (histogram series names kept as written). */
export function metricNamesIn(promql: string): string[] {
  return [...new Set(promql.match(/\btern_[a-z0-9_]+\b/g) ?? [])];
}

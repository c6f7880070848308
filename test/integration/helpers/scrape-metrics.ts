// Reads a process's Prometheus text from its metrics port into samples (bounded: one GET with
// a deadline), and names every tern_ metric a PromQL text mentions, for the monitoring tests.
export interface Sample {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly value: number;
}

const SCRAPE_TIMEOUT_MS = 5_000;

export async function scrape(metricsPort: number): Promise<Sample[]> {
  return parseExposition(await scrapeText(metricsPort));
}

export function parseExposition(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[3] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[4]) });
  }
  return out;
}

/**
 * Names of every registered metric in the text, from its # TYPE lines (a labelled counter
 * has no sample before its first increment but is registered all the same); histograms and
 * summaries also name their _bucket/_sum/_count series.
 */
export function registeredNames(text: string): Set<string> {
  const out = new Set<string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    out.add(m[1]!);
    if (m[2] === "histogram") for (const s of ["_bucket", "_sum", "_count"]) out.add(m[1]! + s);
    if (m[2] === "summary") for (const s of ["_sum", "_count"]) out.add(m[1]! + s);
  }
  return out;
}

export async function scrapeText(metricsPort: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`, {
    signal: AbortSignal.timeout(SCRAPE_TIMEOUT_MS),
  });
  return res.text();
}

/** Sum of one metric's samples whose labels include `match`. */
export function sumOf(
  samples: readonly Sample[],
  name: string,
  match: Record<string, string> = {},
): number {
  return samples
    .filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0);
}

/** Every tern_ metric named in a PromQL expression (histogram series names kept as written). */
export function metricNamesIn(promql: string): string[] {
  return [...new Set(promql.match(/\btern_[a-z0-9_]+\b/g) ?? [])];
}

// What the storage benchmark reads about a broker process from outside: RSS and CPU time from
// /proc, and samples of its Prometheus /metrics (HTTP on loopback, bounded by a timeout).
import { readFileSync } from "node:fs";
import { get } from "node:http";

/** USER_HZ of /proc/PID/stat times: 100 on every Linux this runs on. */
const CLOCK_TICKS_PER_S = 100;
const METRICS_BYTES_MAX = 16 * 1024 * 1024;

/** Resident set size in MiB; undefined when the process is gone (or not Linux). */
export function rssMiB(pid: number): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** User + system CPU time in ms (utime + stime of /proc/PID/stat); undefined when unreadable. */
export function cpuMs(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the ")" that ends the command name; utime and stime are the 12th and 13th there.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_S;
  } catch {
    return undefined;
  }
}

export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** The samples of a Prometheus text exposition (comments and malformed lines skipped). */
export function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, "$1");
    const value = Number(m[3]);
    if (!Number.isNaN(value)) out.push({ name: m[1]!, labels, value });
  }
  return out;
}

/** Sum of every sample whose name matches (e.g. all *_fsyncs_total counters); undefined when none. */
export function sumOf(
  samples: readonly Sample[],
  name: (n: string) => boolean,
): number | undefined {
  const hits = samples.filter((s) => name(s.name));
  return hits.length === 0 ? undefined : hits.reduce((n, s) => n + s.value, 0);
}

/** One gauge by its group label: group id → value. */
export function byGroup(samples: readonly Sample[], name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of samples)
    if (s.name === name && s.labels.group !== undefined) out.set(s.labels.group, s.value);
  return out;
}

/** GET http://ADDRESS/metrics; undefined on any failure or after timeoutMs. */
export function scrape(address: string, timeoutMs: number): Promise<Sample[] | undefined> {
  return new Promise((resolve) => {
    const req = get(`http://${address}/metrics`, { timeout: timeoutMs }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        resolve(undefined);
        return;
      }
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        body += chunk;
        if (body.length > METRICS_BYTES_MAX) req.destroy();
      });
      res.on("end", () => resolve(parseMetrics(body)));
      res.on("error", () => resolve(undefined));
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(undefined));
  });
}

// The markdown table of a `npm run bench -- kafka-peer` run (docs/benchmarks.md): one row per
// case and figure, one column per system and client (Kafka's two flush policies apart). Where a
// variant is a setting of the workload (a commit interval, an isolation level), it joins the row.

export interface PeerLine {
  readonly case: string;
  readonly metric: string;
  readonly value: number;
  readonly unit: string;
  readonly system: string;
  readonly client?: string;
  readonly variant?: string;
  readonly version?: string;
}

/** Variants that name how a system stores (columns); every other variant names a row. */
const STORAGE_VARIANTS: Readonly<Record<string, string>> = {
  "flush-default": "default flush",
  "flush-every-message": "flush.messages=1",
  "fsync-every-commit": "",
};

const SYSTEM_NAMES: Readonly<Record<string, string>> = { kafka: "Kafka", tern: "tern" };

function column(l: PeerLine): string {
  const storage = l.variant !== undefined ? STORAGE_VARIANTS[l.variant] : undefined;
  const system = `${SYSTEM_NAMES[l.system] ?? l.system} ${l.version ?? ""}`.trim();
  const client = l.client === "grpc" ? "gRPC client" : l.client === "java" ? "Java client" : "";
  const detail = [client, storage].filter((s) => s !== undefined && s.length > 0).join(", ");
  return detail.length > 0 ? `${system} (${detail})` : system;
}

function row(l: PeerLine): string {
  const setting =
    l.variant !== undefined && STORAGE_VARIANTS[l.variant] === undefined ? ` ${l.variant}` : "";
  return `${l.case}${setting}: ${l.metric} (${l.unit})`;
}

/** Medians when a run had several rounds: one cell per row and column. */
function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

export function peerTable(lines: readonly PeerLine[]): string {
  const columns: string[] = [];
  const rows: string[] = [];
  const cells = new Map<string, number[]>();
  for (const l of lines) {
    const c = column(l);
    const r = row(l);
    if (!columns.includes(c)) columns.push(c);
    if (!rows.includes(r)) rows.push(r);
    const k = `${r}\u0000${c}`;
    cells.set(k, [...(cells.get(k) ?? []), l.value]);
  }
  // Kafka's columns first, then tern's, each in the order the run met them.
  columns.sort((a, b) => Number(a.startsWith("tern")) - Number(b.startsWith("tern")));
  const out = [`| figure | ${columns.join(" | ")} |`, `| --- |${" --- |".repeat(columns.length)}`];
  for (const r of rows) {
    const values = columns.map((c) => {
      const v = cells.get(`${r}\u0000${c}`);
      return v === undefined ? "–" : String(Math.round(median(v) * 100) / 100);
    });
    out.push(`| ${r} | ${values.join(" | ")} |`);
  }
  return out.join("\n") + "\n";
}

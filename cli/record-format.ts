// How `tern consume` prints a record: a kcat-like format string (-F), or JSON lines (--json).
//   %t topic  %p partition  %o offset  %k key  %s value  %T timestamp (ms)  %h headers (k=v,...)
//   %K key length  %S value length  %%  and the escapes \n \t \\ ; a null key or value prints
//   as the empty string (length -1).
import type { ConsumerRecord } from "../libs/client/index.js";
import { UsageError } from "./output.js";

const DIRECTIVES = "tpokshTKS%";

/** Checks a format string once, before any record is read. */
export function checkFormat(format: string): void {
  for (let i = 0; i < format.length; i++) {
    if (format[i] !== "%") continue;
    const d = format[i + 1];
    if (d === undefined || !DIRECTIVES.includes(d))
      throw new UsageError(
        `--format: unknown directive %${d ?? ""} (known: ${[...DIRECTIVES].map((c) => `%${c}`).join(" ")})`,
      );
    i++;
  }
}

export function formatRecord(format: string, r: ConsumerRecord): string {
  let out = "";
  for (let i = 0; i < format.length; i++) {
    const c = format[i]!;
    if (c === "\\" && i + 1 < format.length) {
      const e = format[++i]!;
      out += e === "n" ? "\n" : e === "t" ? "\t" : e === "\\" ? "\\" : `\\${e}`;
      continue;
    }
    if (c !== "%") {
      out += c;
      continue;
    }
    const d = format[++i];
    switch (d) {
      case "t":
        out += r.topic;
        break;
      case "p":
        out += String(r.partition);
        break;
      case "o":
        out += r.offset.toString();
        break;
      case "k":
        out += r.key?.toString() ?? "";
        break;
      case "s":
        out += r.value?.toString() ?? "";
        break;
      case "T":
        out += String(r.timestampMs);
        break;
      case "h":
        out += Object.entries(r.headers)
          .map(([k, v]) => `${k}=${v.toString()}`)
          .join(",");
        break;
      case "K":
        out += String(r.key?.length ?? -1);
        break;
      case "S":
        out += String(r.value?.length ?? -1);
        break;
      default:
        out += "%";
    }
  }
  return out;
}

/** One JSON line: topic, partition, offset (string), key, value, headers, timestamp. */
export function recordJson(r: ConsumerRecord): string {
  const headers = Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, v.toString()]));
  return JSON.stringify({
    topic: r.topic,
    partition: r.partition,
    offset: r.offset.toString(),
    key: r.key?.toString() ?? null,
    value: r.value?.toString() ?? null,
    headers,
    timestampMs: r.timestampMs,
  });
}

// A datadriven test file format in the style of cockroachdb/datadriven (which etcd-raft's
// interaction tests use): comment lines (#) and blank lines, then a command line, optional input
// lines, a `----` separator and the expected output up to the next blank line. Output that
// contains blank lines is fenced by a doubled separator (`----\n----` ... `----\n----`).
// Pure text in, text out: the test file does the file I/O and the rewrite mode.

export interface CommandArg {
  readonly key: string;
  /** Values of key=v or key=(v1,v2); empty for a bare word. */
  readonly vals: readonly string[];
}

export interface TestCase {
  /** Comment and blank lines preceding the command, verbatim. */
  readonly preamble: string[];
  readonly cmd: string;
  readonly args: readonly CommandArg[];
  /** The command line as written (kept verbatim on rewrite). */
  readonly cmdLine: string;
  readonly input: readonly string[];
  readonly expected: string;
  /** 1-based line of the command, for error messages. */
  readonly line: number;
}

export interface ParsedFile {
  readonly cases: readonly TestCase[];
  /** Trailing comment and blank lines after the last case. */
  readonly trailer: readonly string[];
}

/** Bound on the lines of one file, so a runaway rewrite cannot produce an unbounded file. */
const FILE_LINES_MAX = 200_000;

export function parseArgs(words: readonly string[]): CommandArg[] {
  return words.map((w) => {
    const eq = w.indexOf("=");
    if (eq < 0) return { key: w, vals: [] };
    const key = w.slice(0, eq);
    let v = w.slice(eq + 1);
    if (v.startsWith("(") && v.endsWith(")")) v = v.slice(1, -1);
    return { key, vals: v === "" ? [] : v.split(",").map((s) => s.trim()) };
  });
}

/** Splits on spaces, keeping key=(a, b) lists together. */
function splitWords(line: string): string[] {
  const out: string[] = [];
  let cur = "";
  let depth = 0;
  for (const ch of line) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === " " && depth === 0) {
      if (cur !== "") out.push(cur);
      cur = "";
    } else cur += ch;
  }
  if (cur !== "") out.push(cur);
  return out;
}

export function parseFile(text: string): ParsedFile {
  const lines = text.split("\n");
  if (lines.length > FILE_LINES_MAX)
    throw new Error(`test file has more than ${FILE_LINES_MAX} lines`);
  if (lines[lines.length - 1] === "") lines.pop();
  const cases: TestCase[] = [];
  let preamble: string[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    if (line.trim() === "" || line.startsWith("#")) {
      preamble.push(line);
      i++;
      continue;
    }
    const cmdLine = line;
    const start = i + 1;
    const words = splitWords(line.trim());
    i++;
    const input: string[] = [];
    while (i < lines.length && lines[i] !== "----") input.push(lines[i++]!);
    if (i >= lines.length) throw new Error(`line ${start}: command without a ---- separator`);
    i++; // the separator
    const expected: string[] = [];
    if (lines[i] === "----") {
      // Fenced output: it may hold blank lines.
      i++;
      while (i < lines.length && !(lines[i] === "----" && lines[i + 1] === "----"))
        expected.push(lines[i++]!);
      if (i >= lines.length) throw new Error(`line ${start}: unterminated ---- ---- block`);
      i += 2;
    } else {
      while (i < lines.length && lines[i]!.trim() !== "") expected.push(lines[i++]!);
    }
    cases.push({
      preamble,
      cmd: words[0]!,
      args: parseArgs(words.slice(1)),
      cmdLine,
      input,
      expected: expected.join("\n"),
      line: start,
    });
    preamble = [];
  }
  return { cases, trailer: preamble };
}

/** The file with every case's expected output replaced by `actual[i]` (rewrite mode). */
export function renderFile(parsed: ParsedFile, actual: readonly string[]): string {
  const out: string[] = [];
  parsed.cases.forEach((c, k) => {
    out.push(...c.preamble, c.cmdLine, ...c.input, "----");
    const a = actual[k] ?? c.expected;
    if (a.split("\n").some((l) => l.trim() === "")) out.push("----", a, "----", "----");
    else out.push(a);
  });
  out.push(...parsed.trailer);
  return out.join("\n") + "\n";
}

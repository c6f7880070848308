// Reads the "Files" tables of docs/*.md and compares them with the tree. A table sits under a
// heading "## Files (<folder>/)" (that doc covers that folder) or "## Files" (paths from the
// repository root, no folder claimed). Its first column names files in backticks; a name
// ending in "/" stands for a whole subfolder (described in the concept column or another doc).
// A covered folder's table must name files that exist and every source file of the folder:
// *.ts and *.mjs except tests (*.test.ts), test fakes (testing/) and generated or built code
// (proto-types/, dist/).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

export interface FilesTable {
  /** The doc, relative to the repository root. */
  readonly doc: string;
  /** The folder the table covers, relative to the root, without a trailing slash; undefined for root-relative tables. */
  readonly folder: string | undefined;
  /** Every backticked name in the first column of the table's rows. */
  readonly names: readonly string[];
}

export interface TableProblem {
  readonly doc: string;
  readonly problem: string;
}

const FILES_HEADING = /^##+ Files(?: \((.+?)\))?\s*$/;
const SKIPPED_DIRS = new Set(["testing", "proto-types", "node_modules", "dist"]);
const SOURCE_SUFFIXES = [".ts", ".mjs"];

/** The Files tables of one markdown text. */
export function parseFilesTables(doc: string, text: string): FilesTable[] {
  const lines = text.split("\n");
  const tables: FilesTable[] = [];
  for (let i = 0; i < lines.length; i++) {
    const heading = FILES_HEADING.exec(lines[i]!);
    if (!heading) continue;
    const folder = heading[1]?.replace(/`/g, "").replace(/\/+$/, "");
    let row = i + 1;
    while (row < lines.length && lines[row]!.trim() === "") row++;
    const names: string[] = [];
    // Header row and separator row first, then the rows.
    for (let r = row + 2; r < lines.length && lines[r]!.startsWith("|"); r++) {
      const firstCell = lines[r]!.split("|")[1] ?? "";
      for (const [, name] of firstCell.matchAll(/`([^`]+)`/g)) names.push(name!);
    }
    tables.push({ doc, folder, names });
  }
  return tables;
}

/** Source files of a folder, relative to it, recursively (tests, fakes and generated code left out). */
export function sourceFiles(dir: string, base = dir): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (!SKIPPED_DIRS.has(name)) out.push(...sourceFiles(path, base));
    } else if (SOURCE_SUFFIXES.some((s) => name.endsWith(s)) && !name.endsWith(".test.ts"))
      out.push(relative(base, path));
  }
  return out;
}

/** What is wrong with one table against the tree at root: names that do not exist, files not named. */
export function checkFilesTable(root: string, table: FilesTable): TableProblem[] {
  const problems: TableProblem[] = [];
  const base = table.folder === undefined ? root : join(root, table.folder);
  if (table.folder !== undefined && !existsSync(base))
    return [{ doc: table.doc, problem: `covers ${table.folder}/, which does not exist` }];
  for (const name of table.names) {
    if (!existsSync(join(base, name)))
      problems.push({
        doc: table.doc,
        problem: `names ${name}, which does not exist in ${table.folder ?? "the repository root"}`,
      });
  }
  if (table.folder === undefined) return problems;
  const folders = table.names.filter((n) => n.endsWith("/"));
  for (const file of sourceFiles(base)) {
    const named = table.names.includes(file) || folders.some((f) => file.startsWith(f));
    if (!named) problems.push({ doc: table.doc, problem: `does not name ${table.folder}/${file}` });
  }
  return problems;
}

/** Every Files table of docs/*.md under root. */
export function docsFilesTables(root: string): FilesTable[] {
  const docsDir = join(root, "docs");
  return readdirSync(docsDir)
    .filter((f) => f.endsWith(".md"))
    .sort()
    .flatMap((f) => parseFilesTables(`docs/${f}`, readFileSync(join(docsDir, f), "utf8")));
}

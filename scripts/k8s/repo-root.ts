// The repository root, found from this module's location so it works from the sources
// (vitest) and from dist/ alike.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ANCESTORS_MAX = 8;

export function repoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < ANCESTORS_MAX; i++) {
    const manifest = path.join(dir, "package.json");
    if (
      existsSync(manifest) &&
      (JSON.parse(readFileSync(manifest, "utf8")) as { name?: string }).name === "tern"
    )
      return dir;
    dir = path.dirname(dir);
  }
  throw new Error("repoRoot: no tern package.json above " + fileURLToPath(import.meta.url));
}

// The package version `tern --version` prints, read from the package.json above this file
// (the repository's, from source or from dist/).
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const PARENT_LEVELS_MAX = 6;

export function packageVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let level = 0; level < PARENT_LEVELS_MAX; level++) {
    const file = join(dir, "package.json");
    if (existsSync(file)) {
      const pkg = JSON.parse(readFileSync(file, "utf8")) as { name?: string; version?: string };
      if (pkg.name === "tern" && typeof pkg.version === "string") return pkg.version;
    }
    dir = dirname(dir);
  }
  return "unknown";
}

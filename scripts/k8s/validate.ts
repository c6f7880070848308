// One command for the whole offline validation of the deployment:
//   node dist/scripts/k8s/validate.js [DIR=deploy/k8s]
// renders with kubectl kustomize, validates every object against the Kubernetes schemas
// (unknown fields included), runs the semantic lint and the Dockerfile lint. Prints each
// problem on one line; exits 1 when there is any, 2 when it cannot render.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { lintDockerfile } from "./dockerfile-lint.js";
import { lintManifests } from "./lint.js";
import { RenderError, renderObjects } from "./render.js";
import { repoRoot } from "./repo-root.js";
import { validateSchemas } from "./schema-validate.js";

/**
 * Whether a path exists in a fresh clone: tracked by git (an empty or untracked folder in
 * this work tree would not reach CI's build context). Outside a git checkout: on disk.
 */
export function existsInCheckout(root: string): (relativePath: string) => boolean {
  const result = spawnSync("git", ["ls-files", "-z"], {
    cwd: root,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.status !== 0) return (p) => existsSync(path.join(root, p));
  const files = result.stdout.split("\0").filter((f) => f !== "");
  return (p) => {
    const clean = p.replace(/^\.\/?/, "").replace(/\/$/, "");
    return clean === "" || files.some((f) => f === clean || f.startsWith(clean + "/"));
  };
}

export function validateDeployment(dir: string): string[] {
  const root = repoRoot();
  const objects = renderObjects(dir);
  const problems = [
    ...validateSchemas(objects).map(
      (i) => `schema ${i.object}${i.path === "" ? "" : ` ${i.path}`}: ${i.message}`,
    ),
    ...lintManifests(objects).map((f) => `lint[${f.check}] ${f.object}: ${f.message}`),
    ...lintDockerfile(readFileSync(path.join(root, "Dockerfile"), "utf8"), {
      exists: existsInCheckout(root),
      dockerignore: readFileSync(path.join(root, ".dockerignore"), "utf8").split("\n"),
    }).map((p) => `Dockerfile: ${p}`),
  ];
  return problems;
}

if (
  process.argv[1] !== undefined &&
  path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)
) {
  const dir = path.resolve(process.argv[2] ?? path.join(repoRoot(), "deploy/k8s"));
  try {
    const problems = validateDeployment(dir);
    for (const p of problems) process.stdout.write(p + "\n");
    process.stderr.write(
      problems.length === 0 ? `${dir}: valid\n` : `${dir}: ${problems.length} problem(s)\n`,
    );
    process.exit(problems.length === 0 ? 0 : 1);
  } catch (e) {
    process.stderr.write(`validate: ${(e as Error).message}\n`);
    process.exit(e instanceof RenderError ? 2 : 1);
  }
}

// The Dockerfile cannot be built here (no Docker engine): check it statically, and check
// that the image and the manifests agree on the entry points and the user.
import { describe, expect, it } from "vitest";
import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import {
  ignoreMatcher,
  lintDockerfile,
  parseDockerfile,
} from "../../scripts/k8s/dockerfile-lint.js";
import { renderObjects } from "../../scripts/k8s/render.js";
import { existsInCheckout } from "../../scripts/k8s/validate.js";
import { repoRoot } from "../../scripts/k8s/repo-root.js";
import { NODE_PROCESS_FLAGS } from "../../libs/common/node-flags.js";

const root = repoRoot();
const dockerfile = readFileSync(path.join(root, "Dockerfile"), "utf8");
const options = {
  exists: existsInCheckout(root),
  dockerignore: readFileSync(path.join(root, ".dockerignore"), "utf8").split("\n"),
};

describe("Dockerfile", () => {
  it("passes the static lint", () => {
    expect(lintDockerfile(dockerfile, options)).toEqual([]);
  });

  it("ships what the manifests run: each container command is a service main.ts compiled into dist/", () => {
    const { stages } = parseDockerfile(dockerfile);
    const final = stages[stages.length - 1]!;
    expect(
      final.instructions.some(
        (i) => i.keyword === "COPY" && /--from=build\s+\/src\/dist\s/.test(i.args),
      ),
    ).toBe(true);
    expect(
      final.instructions.some((i) => i.keyword === "WORKDIR" && i.args.trim() === "/app"),
    ).toBe(true);
    const user = Number(
      final.instructions
        .filter((i) => i.keyword === "USER")
        .at(-1)!
        .args.split(":")[0],
    );
    for (const set of renderObjects(path.join(root, "deploy/k8s")).filter(
      (o) => o.kind === "StatefulSet",
    ) as any[]) {
      const container = set.spec.template.spec.containers[0];
      expect(container.workingDir).toBe("/app");
      const script: string = container.command.at(-1);
      // The V8 flags every tern process runs with (libs/common/node-flags.ts), then the service.
      expect(container.command).toEqual(["node", ...NODE_PROCESS_FLAGS, script]);
      const source = script.replace(/^dist\//, "").replace(/\.js$/, ".ts");
      expect(options.exists(source), `${source} (run by ${set.metadata.name})`).toBe(true);
      expect(set.spec.template.spec.securityContext.runAsUser).toBe(user);
    }
  });

  it("the lint catches a single-stage, root, shell-form image that copies missing files", () => {
    const bad = [
      "FROM node:20",
      "COPY nonexistent ./x",
      "COPY test ./test",
      "RUN npm install",
      "ENTRYPOINT node dist/services/broker/main.js",
    ].join("\n");
    const problems = lintDockerfile(bad, options);
    const expected = [
      /multi-stage/,
      /npm ci/,
      /npm run build/,
      /--omit=dev/,
      /no USER/,
      /shell form/,
      /nonexistent does not exist/,
      /test is excluded by .dockerignore/,
    ];
    for (const re of expected)
      expect(
        problems.some((p) => re.test(p)),
        re.source,
      ).toBe(true);
    expect(problems).toHaveLength(expected.length);
  });

  it("the lint rejects root and named users, and COPY --from of an unknown stage", () => {
    const base =
      "ARG IMG=node:20-slim\nFROM ${IMG} AS build\nRUN npm ci && npm run build && npm prune --omit=dev\nFROM ${IMG}\nCOPY --from=bulid /src/dist ./dist\n";
    expect(lintDockerfile(base + 'USER root\nENTRYPOINT ["node"]\n', options)).toEqual([
      "the runtime stage runs as root",
      "line 5: COPY --from=bulid names no earlier stage",
    ]);
    expect(lintDockerfile(base + 'USER node\nENTRYPOINT ["node"]\n', options)).toEqual([
      "USER node is not numeric: runAsNonRoot cannot verify a user name",
      "line 5: COPY --from=bulid names no earlier stage",
    ]);
  });

  it("existence means tracked by git: what a fresh clone has", () => {
    expect(options.exists("package-lock.json")).toBe(true);
    expect(options.exists("libs")).toBe(true);
    expect(options.exists(".")).toBe(true);
    expect(options.exists("node_modules")).toBe(false);
  });

  it(".dockerignore patterns match like Docker's", () => {
    const ignored = ignoreMatcher(["node_modules", "**/*.test.ts", "*.log", "/dist/"]);
    expect(ignored("node_modules/x/index.js")).toBe(true);
    expect(ignored("libs/common/hash.test.ts")).toBe(true);
    expect(ignored("libs/common/hash.ts")).toBe(false);
    expect(ignored("a.log")).toBe(true);
    expect(ignored("dist")).toBe(true);
    expect(ignored("distant")).toBe(false);
  });

  it("the image build has every module it compiles: no file in the build context imports one the context leaves out", () => {
    // `RUN npm run build` compiles what tsconfig.json includes and the context holds; a relative
    // import of an ignored path (test/, a testing/ folder, the benches) fails that build.
    const ignored = ignoreMatcher(options.dockerignore);
    const sources = (dir: string): string[] =>
      readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) => {
        const rel = `${dir}/${e.name}`;
        if (ignored(rel)) return [];
        if (e.isDirectory()) return sources(rel);
        return e.name.endsWith(".ts") ? [rel] : [];
      });
    const specifier = /(?:\bfrom\s+|\bimport\(\s*)["'](\.\.?\/[^"']+)["']/g;
    const problems: string[] = [];
    for (const file of ["libs", "services", "cli", "scripts"].flatMap(sources))
      for (const [, spec] of readFileSync(path.join(root, file), "utf8").matchAll(specifier)) {
        const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), spec!));
        if (ignored(target)) problems.push(`${file} imports ${spec}`);
      }
    expect(problems).toEqual([]);
  });

  it("the image leaves out tests and the testing/ folders of fakes, and keeps the code beside them", () => {
    const ignored = ignoreMatcher(options.dockerignore);
    expect(ignored("services/coordinator/testing/local-replicated-log.ts")).toBe(true);
    expect(ignored("services/coordinator/transaction-coordinator.test.ts")).toBe(true);
    expect(ignored("services/coordinator/transaction-coordinator.ts")).toBe(false);
  });
});

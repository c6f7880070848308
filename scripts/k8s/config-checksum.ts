// The config checksum annotation on pod templates: sha256 over a ConfigMap's data in key
// order. `node dist/scripts/k8s/config-checksum.js --write` recomputes it from the rendered
// deploy/k8s and rewrites deploy/k8s/base/config-checksum.yaml; the lint fails when stale.
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { isStatefulSet, type K8sObject, type PodTemplate } from "./manifest.js";

export const CHECKSUM_ANNOTATION = "tern.dev/config-checksum";

export function configChecksum(data: Record<string, string>): string {
  const hash = createHash("sha256");
  for (const key of Object.keys(data).sort()) {
    hash.update(key).update("\0").update(data[key]!).update("\0");
  }
  return `sha256:${hash.digest("hex")}`;
}

/** Checksum over every ConfigMap a pod template pulls environment from, in reference order. */
export function templateConfigChecksum(
  template: PodTemplate | undefined,
  objects: readonly K8sObject[],
): string | undefined {
  const names = configMapNames(template);
  if (names.length === 0) return undefined;
  const merged: Record<string, string> = {};
  for (const name of names) {
    const configMap = objects.find((o) => o.kind === "ConfigMap" && o.metadata.name === name);
    if (configMap === undefined) return undefined;
    // Later sources override earlier ones, as envFrom does.
    for (const [key, value] of Object.entries(configMap.data ?? {})) merged[key] = value;
  }
  return configChecksum(merged);
}

function configMapNames(template: PodTemplate | undefined): string[] {
  const names: string[] = [];
  for (const container of template?.spec?.containers ?? []) {
    for (const source of container.envFrom ?? []) {
      const name = source.configMapRef?.name;
      if (typeof name === "string" && !names.includes(name)) names.push(name);
    }
  }
  return names;
}

async function main(argv: readonly string[]): Promise<void> {
  const { renderObjects } = await import("./render.js");
  const { repoRoot } = await import("./repo-root.js");
  // The ConfigMap and the annotation patch live in the base (deploy/k8s renders it with TLS and security on top).
  const dir = path.join(repoRoot(), "deploy/k8s/base");
  const objects = renderObjects(path.join(repoRoot(), "deploy/k8s"));
  const sums = new Set<string>();
  for (const o of objects) {
    if (!isStatefulSet(o)) continue;
    const sum = templateConfigChecksum(o.spec.template, objects);
    if (sum !== undefined) sums.add(sum);
  }
  if (sums.size !== 1)
    throw new Error(
      `expected one config checksum across StatefulSets, got ${[...sums].join(", ") || "none"}`,
    );
  const sum = [...sums][0]!;
  process.stdout.write(sum + "\n");
  if (argv.includes("--write")) {
    const file = path.join(dir, "config-checksum.yaml");
    const text = readFileSync(file, "utf8").replace(
      /(tern\.dev\/config-checksum: )"[^"]*"/,
      `$1"${sum}"`,
    );
    writeFileSync(file, text);
  }
}

if (
  process.argv[1] !== undefined &&
  path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)
) {
  main(process.argv.slice(2)).catch((e: Error) => {
    process.stderr.write(`config-checksum: ${e.message}\n`);
    process.exit(1);
  });
}

// Renders a kustomization with the real `kubectl kustomize` and parses the YAML stream.
import { spawnSync } from "node:child_process";
import { parseAllDocuments } from "yaml";
import type { K8sObject } from "./manifest.js";

export class RenderError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "RenderError";
  }
}

const RENDER_TIMEOUT_MS = 60_000;
const RENDER_OUTPUT_BYTES_MAX = 16 * 1024 * 1024;

/** Runs `kubectl kustomize <dir>`; a missing kubectl is reported as such, not as a parse error. */
export function renderKustomize(dir: string, kubectl = process.env.KUBECTL ?? "kubectl"): string {
  const result = spawnSync(kubectl, ["kustomize", dir], {
    encoding: "utf8",
    timeout: RENDER_TIMEOUT_MS,
    maxBuffer: RENDER_OUTPUT_BYTES_MAX,
  });
  if (result.error !== undefined) {
    const code = (result.error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") {
      throw new RenderError(
        `kubectl not found (looked for "${kubectl}"): install kubectl >= 1.27 or set KUBECTL to its path`,
      );
    }
    throw new RenderError(`kubectl kustomize ${dir} failed: ${result.error.message}`);
  }
  if (result.status !== 0) {
    throw new RenderError(
      `kubectl kustomize ${dir} exited ${result.status}: ${result.stderr.trim()}`,
    );
  }
  return result.stdout;
}

/** Parses a multi-document YAML stream; every document must be an object with kind and name. */
export function parseManifests(text: string): K8sObject[] {
  const objects: K8sObject[] = [];
  for (const document of parseAllDocuments(text)) {
    if (document.errors.length > 0) throw new RenderError(`YAML: ${document.errors[0]!.message}`);
    const value = document.toJS() as unknown;
    if (value === null || value === undefined) continue;
    if (typeof value !== "object" || Array.isArray(value))
      throw new RenderError("YAML: a document is not an object");
    const o = value as K8sObject;
    if (
      typeof o.kind !== "string" ||
      typeof o.apiVersion !== "string" ||
      typeof o.metadata?.name !== "string"
    ) {
      throw new RenderError(
        `YAML: a document lacks apiVersion, kind or metadata.name: ${JSON.stringify(value).slice(0, 120)}`,
      );
    }
    objects.push(o);
  }
  return objects;
}

export function renderObjects(dir: string): K8sObject[] {
  return parseManifests(renderKustomize(dir));
}

// The shipped deploy/k8s: renders with kubectl kustomize, validates against the Kubernetes
// schemas (including unknown fields), and passes the semantic lint.
import { describe, expect, it } from "vitest";
import path from "node:path";
import {
  RenderError,
  parseManifests,
  renderKustomize,
  renderObjects,
} from "../../scripts/k8s/render.js";
import { lintManifests } from "../../scripts/k8s/lint.js";
import { validateSchemas } from "../../scripts/k8s/schema-validate.js";
import { repoRoot } from "../../scripts/k8s/repo-root.js";
import { validateDeployment } from "../../scripts/k8s/validate.js";

const DEPLOY_DIR = path.join(repoRoot(), "deploy/k8s");

describe("deploy/k8s", () => {
  const objects = renderObjects(DEPLOY_DIR);
  const refs = objects.map((o) => `${o.kind}/${o.metadata.name}`);

  it("renders the namespace, a StatefulSet, headless Service and PDB per role, a bootstrap Service and the ConfigMap", () => {
    for (const role of ["controller", "broker", "coordinator"]) {
      expect(refs).toContain(`StatefulSet/tern-${role}`);
      expect(refs).toContain(`Service/tern-${role}`);
      expect(refs).toContain(`PodDisruptionBudget/tern-${role}`);
    }
    expect(refs).toContain("Namespace/tern");
    expect(refs).toContain("Service/tern-bootstrap");
    expect(refs.some((r) => /^ConfigMap\/tern-config-[a-z0-9]+$/.test(r))).toBe(true);
    expect(
      objects.filter((o) => o.kind !== "Namespace").every((o) => o.metadata.namespace === "tern"),
    ).toBe(true);
  });

  it("validates against the Kubernetes schemas, unknown fields included", () => {
    expect(validateSchemas(objects)).toEqual([]);
  });

  it("passes the semantic lint", () => {
    expect(lintManifests(objects)).toEqual([]);
  });

  it("validateDeployment (the CLI's core) passes the shipped manifests and reports a broken one", () => {
    expect(validateDeployment(DEPLOY_DIR)).toEqual([]);
    expect(validateDeployment(path.join(repoRoot(), "test/k8s/fixtures/unknown-field"))).toEqual([
      expect.stringMatching(
        /^schema StatefulSet\/tern-controller spec\.template\.spec\.containers\[0\]\.readinesProbe: .*readinesProbe/,
      ),
    ]);
  });

  it("a missing kubectl is reported as such", () => {
    expect(() => renderKustomize(DEPLOY_DIR, "/nonexistent/kubectl")).toThrow(/kubectl not found/);
  });

  it("malformed YAML and kind-less documents are rejected", () => {
    expect(() => parseManifests("a: [1,\n")).toThrow(RenderError);
    expect(() => parseManifests("apiVersion: v1\nmetadata: {name: x}\n")).toThrow(
      /lacks apiVersion, kind/,
    );
  });
});

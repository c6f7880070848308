// Each fixture under test/k8s/fixtures/ is a kustomize overlay of deploy/k8s-plaintext (tls-*:
// of deploy/k8s) that breaks one thing. The same pipeline as for the real manifests must reject it, through the check
// named here and no other: every check can fail, and fails for its own reason.
import { describe, expect, it } from "vitest";
import path from "node:path";
import { renderObjects } from "../../scripts/k8s/render.js";
import { lintManifests } from "../../scripts/k8s/lint.js";
import { validateSchemas } from "../../scripts/k8s/schema-validate.js";
import { repoRoot } from "../../scripts/k8s/repo-root.js";
import type { K8sObject } from "../../scripts/k8s/manifest.js";

const fixture = (name: string): K8sObject[] =>
  renderObjects(path.join(repoRoot(), "test/k8s/fixtures", name));

const LINT_CASES: ReadonlyArray<[fixture: string, checks: string[]]> = [
  ["selector-mismatch", ["selector-matches-template"]],
  ["service-not-headless", ["service-name-headless", "listen-ports"]],
  ["probe-port-missing", ["probe-ports"]],
  ["pdb-selector", ["pdb-selects-workload"]],
  ["missing-env", ["config-env"]],
  ["env-typo", ["config-env"]],
  ["bad-flag", ["config-env"]],
  ["heap-too-big", ["heap-vs-memory"]],
  ["grace-too-short", ["termination-grace"]],
  ["stale-checksum", ["config-checksum"]],
  ["insecure", ["security-context"]],
  ["controllers-list", ["controllers-list"]],
  ["env-order", ["config-env"]],
  ["listen-port", ["listen-ports"]],
  ["data-not-persistent", ["data-volume"]],
  ["ordered-start", ["statefulset-policy"]],
  ["bootstrap-brokers", ["bootstrap-service"]],
  ["tls-grpc-probe", ["tls"]],
  ["tls-wrong-role", ["tls"]],
];

describe("broken manifests are rejected", () => {
  it.each(LINT_CASES)("lint rejects %s", (name, checks) => {
    const findings = lintManifests(fixture(name));
    expect(findings.length).toBeGreaterThan(0);
    expect([...new Set(findings.map((f) => f.check))].sort()).toEqual([...checks].sort());
  });

  it("the schema check catches an unknown field, with its path", () => {
    const issues = validateSchemas(fixture("unknown-field"));
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatchObject({
      object: "StatefulSet/tern-controller",
      path: "spec.template.spec.containers[0].readinesProbe",
    });
  });

  it("the Certificate schema catches an unknown field, with its path", () => {
    const issues = validateSchemas(fixture("tls-certificate-typo"));
    expect(issues).toEqual([
      {
        object: "Certificate/tern-coordinator",
        path: "spec.dnsName",
        message: 'unknown field "dnsName"',
      },
    ]);
  });

  it("the models' validator catches a wrong type", () => {
    const issues = validateSchemas(fixture("wrong-type"));
    const objects = new Set(issues.map((i) => i.object));
    expect(objects).toEqual(new Set(["StatefulSet/tern-broker"]));
    expect(issues.some((i) => i.path === "" && /replicas/.test(i.message))).toBe(true);
    expect(issues.some((i) => i.path === "spec.replicas")).toBe(true);
  });

  it("the shipped manifests pass both, so the failures above are the fixtures' own", () => {
    for (const dir of ["deploy/k8s", "deploy/k8s-plaintext"]) {
      const objects = renderObjects(path.join(repoRoot(), dir));
      expect(lintManifests(objects)).toEqual([]);
      expect(validateSchemas(objects)).toEqual([]);
    }
  });
});

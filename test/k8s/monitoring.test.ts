// The opt-in monitoring overlay deploy/monitoring: renders offline with kubectl kustomize to the
// base manifests plus a PodMonitor, the PrometheusRule and the dashboard ConfigMap; the base
// objects still validate; every alert is well formed and has its runbook entry. (That every
// metric the rules and dashboard name exists is test/integration/operations.test.ts.)
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { renderObjects } from "../../scripts/k8s/render.js";
import { repoRoot } from "../../scripts/k8s/repo-root.js";
import { validateSchemas } from "../../scripts/k8s/schema-validate.js";

const DIR = path.join(repoRoot(), "deploy/monitoring");
const CRD_KINDS = new Set(["PodMonitor", "PrometheusRule"]);

describe("deploy/monitoring", () => {
  const objects = renderObjects(DIR);
  const byKind = (kind: string) => objects.filter((o) => o.kind === kind);

  it("adds a PodMonitor on the metrics port, the rules and the dashboard to the base, in the tern namespace", () => {
    const [monitor] = byKind("PodMonitor") as any[];
    expect(monitor.spec.podMetricsEndpoints[0].port).toBe("metrics");
    expect(monitor.spec.selector.matchLabels["app.kubernetes.io/name"]).toBe("tern");
    expect(byKind("PrometheusRule")).toHaveLength(1);
    const dashboard = byKind("ConfigMap").find(
      (o) => o.metadata.name === "tern-grafana-dashboard",
    ) as any;
    expect(dashboard.metadata.labels.grafana_dashboard).toBe("1");
    expect(JSON.parse(dashboard.data["tern-dashboard.json"]).uid).toBe("tern-overview");
    expect(
      byKind("StatefulSet")
        .map((o) => o.metadata.name)
        .sort(),
    ).toEqual(["tern-broker", "tern-controller", "tern-coordinator"]);
    expect(
      objects.filter((o) => o.kind !== "Namespace").every((o) => o.metadata.namespace === "tern"),
    ).toBe(true);
  });

  it("the pods the PodMonitor selects name a metrics container port", () => {
    for (const s of byKind("StatefulSet") as any[]) {
      expect(s.spec.template.metadata.labels["app.kubernetes.io/name"]).toBe("tern");
      expect(
        s.spec.template.spec.containers[0].ports.map((p: { name: string }) => p.name),
      ).toContain("metrics");
    }
  });

  it("the base objects still validate against the Kubernetes schemas", () => {
    expect(validateSchemas(objects.filter((o) => !CRD_KINDS.has(o.kind)))).toEqual([]);
  });

  it("every alert has an expression, a for, a severity, a summary, and a runbook entry in docs/operations.md", () => {
    const [rule] = byKind("PrometheusRule") as any[];
    const runbook = readFileSync(path.join(repoRoot(), "docs/operations.md"), "utf8");
    const alerts = rule.spec.groups.flatMap((g: any) => g.rules);
    expect(alerts.map((a: any) => a.alert)).toEqual(
      expect.arrayContaining([
        "TernNoControllerLeader",
        "TernOfflinePartitions",
        "TernUnderReplicatedPartitions",
        "TernTransactionPastTimeout",
        "TernLastStableOffsetStuck",
        "TernDiskReserveReached",
      ]),
    );
    for (const a of alerts) {
      expect(a.expr, a.alert).toMatch(/tern_/);
      expect(a.for, a.alert).toMatch(/^\d+[smh]$/);
      expect(["critical", "warning"], a.alert).toContain(a.labels.severity);
      expect(a.annotations.summary, a.alert).toBeTruthy();
      expect(runbook, a.alert).toContain(`#### ${a.alert}`);
    }
  });
});

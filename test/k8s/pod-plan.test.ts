// The local stand-in for the kubelet: command, args and environment of each pod exactly as
// Kubernetes builds them from the rendered manifests, then mapped onto loopback.
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import path from "node:path";
import { imageDefaults } from "../../scripts/k8s/dockerfile-lint.js";
import { PlanError, planPods, type PlanOptions } from "../../scripts/k8s/pod-plan.js";
import { expandVars } from "../../scripts/k8s/pod-env.js";
import { renderObjects } from "../../scripts/k8s/render.js";
import { repoRoot } from "../../scripts/k8s/repo-root.js";
import { NODE_PROCESS_FLAGS } from "../../libs/common/node-flags.js";

const root = repoRoot();
const objects = renderObjects(path.join(root, "deploy/k8s-plaintext"));
const base: PlanOptions = {
  objects,
  image: imageDefaults(readFileSync(path.join(root, "Dockerfile"), "utf8")),
  appDir: root,
  volumeRoot: "/tmp/vol",
  ipFor: (i) => `127.0.9.${i + 1}`,
  hostEnv: { PATH: "/usr/bin" },
};

describe("planPods", () => {
  const plans = planPods(base);
  const byName = new Map(plans.map((p) => [p.podName, p]));

  it("plans every ordinal of every StatefulSet, each on its own address", () => {
    expect(plans.map((p) => p.podName).sort()).toEqual(
      ["broker", "controller", "coordinator"]
        .flatMap((r) => [0, 1, 2].map((i) => `tern-${r}-${i}`))
        .sort(),
    );
    expect(new Set(plans.map((p) => p.ip)).size).toBe(9);
  });

  it("derives the node id from the pod ordinal and advertises the pod's DNS name, mapped to its address", () => {
    const pod = byName.get("tern-broker-2")!;
    expect(pod.fqdn).toBe("tern-broker-2.tern-broker.tern.svc.cluster.local");
    expect(pod.env.TERN_NODE_ID).toBe("2");
    expect(pod.env.TERN_ADVERTISE).toBe(`${pod.ip}:9190`);
    expect(pod.env.TERN_LISTEN).toBe(`${pod.ip}:9190`);
    expect(pod.env.TERN_METRICS_LISTEN).toBe(`${pod.ip}:10190`);
    expect(pod.env.HOSTNAME).toBe("tern-broker-2");
    expect(pod.env.NODE_ENV).toBe("production");
    expect(pod.env.TERN_LOG_LEVEL).toBe("info");
  });

  it("points every pod at the controllers' addresses and its data volume at a local directory", () => {
    const controllers = [0, 1, 2]
      .map((i) => `${i}@${byName.get(`tern-controller-${i}`)!.ip}:9090`)
      .join(",");
    for (const pod of plans) {
      expect(pod.env.TERN_CONTROLLERS).toBe(controllers);
      expect(pod.env.TERN_DATA_DIR).toBe(`/tmp/vol/${pod.podName}/data/data`);
      expect(pod.volumeDirs).toContain(`/tmp/vol/${pod.podName}/data`);
      expect(pod.argv).toEqual([
        process.execPath,
        ...NODE_PROCESS_FLAGS,
        `dist/services/${pod.statefulSet.replace("tern-", "")}/main.js`,
      ]);
      expect(pod.cwd).toBe(root);
    }
  });

  it("carries the probes and the termination timings", () => {
    const pod = byName.get("tern-coordinator-0")!;
    expect(pod.probes.map((p) => `${p.kind}:${p.type}:${p.host}:${p.port}`)).toEqual(
      ["startup", "readiness", "liveness"].map((k) => `${k}:grpc:${pod.ip}:9290`),
    );
    expect(pod.preStopSleepSeconds).toBe(5);
    expect(pod.terminationGracePeriodSeconds).toBe(45);
  });

  it("uses the image ENTRYPOINT and CMD when the container sets neither", () => {
    const stripped = structuredClone(objects);
    const set: any = stripped.find(
      (o) => o.kind === "StatefulSet" && o.metadata.name === "tern-broker",
    )!;
    delete set.spec.template.spec.containers[0].command;
    const pod = planPods({ ...base, objects: stripped, only: ["tern-broker"] })[0]!;
    expect(pod.argv).toEqual([
      process.execPath,
      ...NODE_PROCESS_FLAGS,
      "dist/services/broker/main.js",
    ]);
  });

  it("refuses what it cannot emulate instead of guessing", () => {
    const changed = structuredClone(objects);
    const set: any = changed.find(
      (o) => o.kind === "StatefulSet" && o.metadata.name === "tern-broker",
    )!;
    set.spec.template.spec.containers[0].env.push({
      name: "X",
      valueFrom: { fieldRef: { fieldPath: "metadata.uid" } },
    });
    expect(() => planPods({ ...base, objects: changed })).toThrow(PlanError);
    expect(() => planPods({ ...base, only: ["tern-nope"] })).toThrow(/not found/);
  });

  it("expands $(VAR) as Kubernetes does", () => {
    const env = new Map([
      ["A", "x"],
      ["B", "y"],
    ]);
    expect(expandVars("$(A).$(B)", env)).toBe("x.y");
    expect(expandVars("$$(A)", env)).toBe("$(A)");
    expect(expandVars("$(C)", env)).toBe("$(C)");
  });
});

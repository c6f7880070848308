// deploy/k8s's TLS (deploy/k8s/components/tls on the plaintext base; the security component and
// the NetworkPolicy are secure-default.test.ts's): renders offline, passes
// the schemas (cert-manager's Certificate included) and the lint, leaves every object of the
// base but the StatefulSets untouched, mounts each role's Secret read-only where the TERN_TLS_*
// variables point, names each role in its Certificate's SAN URI with DNS names for every name
// a client dials, and probes over the metrics port's HTTP instead of `grpc:`.
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import path from "node:path";
import { coversName } from "../../scripts/k8s/tls-lint.js";
import { imageDefaults } from "../../scripts/k8s/dockerfile-lint.js";
import { lintManifests } from "../../scripts/k8s/lint.js";
import {
  objectRef,
  selectorMatches,
  mapSelector,
  type K8sObject,
} from "../../scripts/k8s/manifest.js";
import { planPods } from "../../scripts/k8s/pod-plan.js";
import { renderObjects } from "../../scripts/k8s/render.js";
import { repoRoot } from "../../scripts/k8s/repo-root.js";
import { validateSchemas } from "../../scripts/k8s/schema-validate.js";
import { validateDeployment } from "../../scripts/k8s/validate.js";

const root = repoRoot();
const TLS_DIR = path.join(root, "deploy/k8s");
const ROLES = ["controller", "broker", "coordinator"] as const;
const MOUNT = "/etc/tern/tls";

describe("deploy/k8s: TLS", () => {
  const objects = renderObjects(TLS_DIR);
  const base: any[] = renderObjects(path.join(root, "deploy/k8s-plaintext"));
  const sets = new Map<string, any>(
    objects.filter((o) => o.kind === "StatefulSet").map((o) => [o.metadata.name, o]),
  );
  // The processes' certificates (the admin client's has no role: secure-default.test.ts).
  const certificates: any[] = objects.filter(
    (o: any) => o.kind === "Certificate" && (o.spec.uris ?? []).length > 0,
  );

  it("renders the base plus one Certificate per role; every other base object is unchanged", () => {
    expect(
      certificates.map((c) => `${c.apiVersion} ${c.metadata.name} ${c.metadata.namespace}`).sort(),
    ).toEqual(ROLES.map((r) => `cert-manager.io/v1 tern-${r} tern`).sort());
    const rendered = new Map(objects.map((o) => [objectRef(o), o]));
    for (const o of base) {
      expect(rendered.has(objectRef(o)), objectRef(o)).toBe(true);
      if (o.kind !== "StatefulSet") expect(rendered.get(objectRef(o)), objectRef(o)).toEqual(o);
    }
    // Beside them: the security component (admin Certificate, Job, its ServiceAccount, Role and
    // RoleBinding) and the NetworkPolicy.
    const known = new Set([...base, ...certificates].map(objectRef));
    expect(
      objects
        .map(objectRef)
        .filter((r) => !known.has(r))
        .sort(),
    ).toEqual(
      [
        "Certificate/tern-admin",
        "Job/tern-admin-credential",
        "NetworkPolicy/tern-peers",
        "Role/tern-admin-credential",
        "RoleBinding/tern-admin-credential",
        "ServiceAccount/tern-admin-credential",
      ].sort(),
    );
  });

  it("validates against the schemas and passes the lint (its tls check included)", () => {
    expect(validateSchemas(objects)).toEqual([]);
    expect(lintManifests(objects)).toEqual([]);
    expect(validateDeployment(TLS_DIR)).toEqual([]);
  });

  it("mounts each role's own Secret read-only, whole directory, and points the TLS settings into it", () => {
    for (const role of ROLES) {
      const set = sets.get(`tern-${role}`)!;
      const pod = set.spec.template.spec;
      const container = pod.containers[0];
      const mount = container.volumeMounts.find((m: any) => m.mountPath === MOUNT);
      expect(mount, role).toEqual({ name: "tls", mountPath: MOUNT, readOnly: true });
      expect(
        pod.volumes.find((v: any) => v.name === "tls"),
        role,
      ).toEqual({ name: "tls", secret: { secretName: `tern-${role}-tls`, defaultMode: 0o440 } });
      const env = Object.fromEntries(
        container.env
          .filter((e: any) => e.name.startsWith("TERN_TLS_"))
          .map((e: any) => [e.name, e.value]),
      );
      expect(env, role).toEqual({
        TERN_TLS_CERT_FILE: `${MOUNT}/tls.crt`,
        TERN_TLS_KEY_FILE: `${MOUNT}/tls.key`,
        TERN_TLS_CA_FILE: `${MOUNT}/ca.crt`,
        TERN_TLS_RELOAD_MS: "10000",
      });
    }
    // What the local stand-in for the kubelet builds: the files land in the pod's Secret directory.
    const plans = planPods({
      objects,
      image: imageDefaults(readFileSync(path.join(root, "Dockerfile"), "utf8")),
      appDir: root,
      volumeRoot: "/tmp/vol",
      ipFor: (i) => `127.0.9.${i + 1}`,
      hostEnv: {},
    });
    expect(plans).toHaveLength(9);
    for (const p of plans) {
      expect(p.volumeDirs).toContain(`/tmp/vol/${p.podName}/tls`);
      expect(p.env.TERN_TLS_KEY_FILE).toBe(`/tmp/vol/${p.podName}/tls/tls.key`);
    }
  });

  it("gives each Certificate its role's URI SAN, both TLS usages and DNS names for every pod and Service of the role", () => {
    for (const role of ROLES) {
      const certificate = certificates.find((c) => c.metadata.name === `tern-${role}`)!;
      const spec = certificate.spec;
      expect(spec.secretName).toBe(`tern-${role}-tls`);
      expect(spec.uris).toEqual([`tern:role:${role}`]);
      expect(spec.usages).toEqual(expect.arrayContaining(["server auth", "client auth"]));
      expect(spec.issuerRef.name).toBe("tern-ca-issuer");
      expect(spec.privateKey.rotationPolicy).toBe("Always");
      const set = sets.get(`tern-${role}`)!;
      const ns = set.metadata.namespace;
      const names: string[] = [];
      for (let i = 0; i < set.spec.replicas + 2; i++) {
        // Scaling up needs no new certificate: ordinals beyond the replicas are covered too.
        const pod = `tern-${role}-${i}.${set.spec.serviceName}`;
        names.push(pod, `${pod}.${ns}`, `${pod}.${ns}.svc`, `${pod}.${ns}.svc.cluster.local`);
      }
      const labels = set.spec.template.metadata.labels;
      for (const service of objects.filter(
        (o: any) => o.kind === "Service" && selectorMatches(mapSelector(o.spec.selector), labels),
      )) {
        const s = service.metadata.name;
        names.push(s, `${s}.${ns}`, `${s}.${ns}.svc`, `${s}.${ns}.svc.cluster.local`);
      }
      if (role === "controller") expect(names).toContain("tern-bootstrap");
      for (const name of names)
        expect(coversName(spec.dnsNames, name), `${role}: ${name}`).toBe(true);
      // A wildcard covers one label: it must not stretch over another role's names.
      expect(
        coversName(
          spec.dnsNames,
          `tern-${role === "broker" ? "controller" : "broker"}-0.tern-${role === "broker" ? "controller" : "broker"}.${ns}.svc.cluster.local`,
        ),
      ).toBe(false);
    }
  });

  it("probes over the metrics port's HTTP: /healthz for startup and readiness, /livez for liveness; none is grpc:", () => {
    for (const set of sets.values()) {
      const c = set.spec.template.spec.containers[0];
      for (const kind of ["startupProbe", "readinessProbe", "livenessProbe"])
        expect(c[kind].grpc, `${set.metadata.name} ${kind}`).toBeUndefined();
      expect(c.startupProbe.httpGet).toEqual({ path: "/healthz", port: "metrics" });
      expect(c.readinessProbe.httpGet).toEqual({ path: "/healthz", port: "metrics" });
      expect(c.livenessProbe.httpGet).toEqual({ path: "/livez", port: "metrics" });
      // Same timings as the base: the budget for log recovery stays.
      const before = base.find((o: K8sObject) => objectRef(o) === objectRef(set))!.spec.template
        .spec.containers[0];
      expect(c.startupProbe.failureThreshold).toBe(before.startupProbe.failureThreshold);
    }
  });

  it("coversName matches as TLS clients do", () => {
    expect(coversName(["*.a.b"], "x.a.b")).toBe(true);
    expect(coversName(["*.a.b"], "a.b")).toBe(false);
    expect(coversName(["*.a.b"], "y.x.a.b")).toBe(false);
    expect(coversName(["A.b"], "a.B")).toBe(true);
  });
});

// deploy/k8s is secure by default and deploy/k8s-plaintext is the explicit exception:
// - every process of the rendered manifests runs with TLS and --security acl, and the binaries'
//   own configuration parser accepts each pod's environment as one consistent posture (no
//   half-secured pod: that would stop it at start);
// - no Secret is committed: the admin credential is generated in the cluster by a Job whose
//   script exists in the build, with RBAC limited to reading that one Secret;
// - the NetworkPolicy selects exactly the tern pods, admits every port only from tern pods,
//   the gRPC (peer) ports otherwise only from pods labelled as clients (the admin Job is one),
//   and never from outside the namespace;
// - the plaintext overlay has none of it.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { loadServiceConfig, type Role } from "../../libs/common/config.js";
import { imageDefaults } from "../../scripts/k8s/dockerfile-lint.js";
import { selectorMatches } from "../../scripts/k8s/manifest.js";
import { planPods, type PodPlan } from "../../scripts/k8s/pod-plan.js";
import { renderObjects } from "../../scripts/k8s/render.js";
import { repoRoot } from "../../scripts/k8s/repo-root.js";

const root = repoRoot();

function plansOf(dir: string): PodPlan[] {
  return planPods({
    objects: renderObjects(path.join(root, dir)),
    image: imageDefaults(readFileSync(path.join(root, "Dockerfile"), "utf8")),
    appDir: root,
    volumeRoot: "/tmp/vol",
    ipFor: (i) => `127.0.9.${i + 1}`,
    hostEnv: {},
  });
}

const roleOf = (p: PodPlan): Role => p.statefulSet.replace("tern-", "") as Role;

describe("deploy/k8s: secure by default", () => {
  const objects: any[] = renderObjects(path.join(root, "deploy/k8s"));
  const sets = objects.filter((o) => o.kind === "StatefulSet");

  it("every pod runs TLS and --security acl with the same super-users, and the binaries accept it", () => {
    const plans = plansOf("deploy/k8s");
    expect(plans).toHaveLength(9);
    const superUsers = new Set(plans.map((p) => p.env.TERN_SUPER_USERS));
    expect([...superUsers]).toEqual(["User:tern-admin,User:admin"]);
    for (const p of plans) {
      expect(p.env.TERN_SECURITY, p.podName).toBe("acl");
      // The parser of the binaries: throws on a half-secured or TLS-less configuration.
      const config = loadServiceConfig(roleOf(p), [], p.env);
      expect(config.tls, p.podName).toBeDefined();
      expect(config.authenticationRequired, p.podName).toBe(true);
      expect(config.grpcAuthorizer?.superUsers, p.podName).toEqual([
        "User:tern-admin",
        "User:admin",
      ]);
      if (config.kafkaListen !== undefined) {
        expect(config.kafkaSasl, p.podName).toBe("required");
        expect(config.kafkaAuthorizer, p.podName).toBeDefined();
      }
    }
  });

  it("commits no Secret: a Job generates the admin credential, with RBAC for that one Secret", () => {
    expect(objects.filter((o) => o.kind === "Secret")).toEqual([]);
    const job = objects.find(
      (o) => o.kind === "Job" && o.metadata.name === "tern-admin-credential",
    );
    const container = job.spec.template.spec.containers[0];
    const script = container.args.find((a: string) => a.endsWith(".js"));
    expect(script).toBe("dist/scripts/k8s/admin-credential.js");
    expect(existsSync(path.join(root, script)), `${script}: run npm run build`).toBe(true);
    const env = Object.fromEntries(container.env.map((e: any) => [e.name, e.value]));
    expect(Object.keys(env).some((k) => /PASSWORD/i.test(k))).toBe(false);
    // The Job authenticates as the admin client certificate (a user: no tern:role: URI).
    const tlsVolume = job.spec.template.spec.volumes.find((v: any) => v.name === "tls");
    const adminCert = objects.find(
      (o) => o.kind === "Certificate" && o.spec.secretName === tlsVolume.secret.secretName,
    );
    expect(adminCert.spec.commonName).toBe("tern-admin");
    expect(adminCert.spec.uris).toBeUndefined();
    const role = objects.find(
      (o) => o.kind === "Role" && o.metadata.name === "tern-admin-credential",
    );
    const reads = role.rules.filter((r: any) => r.verbs.includes("get"));
    expect(reads).toEqual([
      expect.objectContaining({ resources: ["secrets"], resourceNames: [env.TERN_ADMIN_SECRET] }),
    ]);
    expect(role.rules.flatMap((r: any) => r.verbs).sort()).toEqual(["create", "get"]);
    expect(job.spec.template.spec.serviceAccountName).toBe(
      objects.find((o) => o.kind === "RoleBinding").subjects[0].name,
    );
  });

  it("the NetworkPolicy admits only the cluster's own pods (and labelled clients) to the gRPC ports", () => {
    const policies = objects.filter((o) => o.kind === "NetworkPolicy");
    expect(policies).toHaveLength(1);
    const policy = policies[0];
    expect(policy.spec.policyTypes).toEqual(["Ingress"]);
    const selected = (labels: Record<string, string> | undefined) =>
      selectorMatches(policy.spec.podSelector, labels);
    for (const s of sets)
      expect(selected(s.spec.template.metadata.labels), s.metadata.name).toBe(true);
    const grpcPorts = sets.map(
      (s) =>
        s.spec.template.spec.containers[0].ports.find((p: any) => p.name === "grpc").containerPort,
    );
    expect(grpcPorts.sort()).toEqual([9090, 9190, 9290]);
    const ternLabels = sets[0].spec.template.metadata.labels;
    const job = objects.find((o) => o.kind === "Job");
    for (const rule of policy.spec.ingress) {
      const from: any[] | undefined = rule.from;
      const ports: number[] | undefined = rule.ports?.map((p: any) => p.port);
      // Never a namespace or address range: peers are this namespace's pods.
      for (const peer of from ?? []) expect(Object.keys(peer)).toEqual(["podSelector"]);
      const opensGrpc = ports === undefined || ports.some((p) => grpcPorts.includes(p));
      if (!opensGrpc) continue;
      expect(from, JSON.stringify(rule)).toBeDefined();
      for (const peer of from!) {
        const admitsTern = selectorMatches(peer.podSelector, ternLabels);
        const admitsClients = selectorMatches(peer.podSelector, { "tern.dev/client": "true" });
        expect(admitsTern || admitsClients, JSON.stringify(peer)).toBe(true);
        // Everything else (an arbitrary pod of the namespace) stays out.
        expect(selectorMatches(peer.podSelector, { app: "other" })).toBe(false);
      }
      // Every port only for tern pods; clients get the gRPC ports and nothing else.
      if (ports === undefined)
        expect(from!.every((peer) => selectorMatches(peer.podSelector, ternLabels))).toBe(true);
    }
    // The admin Job reaches the controllers' gRPC port as a labelled client, not as a tern pod.
    expect(job.spec.template.metadata.labels["tern.dev/client"]).toBe("true");
    expect(selected(job.spec.template.metadata.labels)).toBe(false);
  });

  it("deploy/k8s-plaintext is the explicit plaintext overlay: no TLS, no security, no policy", () => {
    const plain: any[] = renderObjects(path.join(root, "deploy/k8s-plaintext"));
    expect(plain.filter((o) => ["NetworkPolicy", "Job", "Certificate"].includes(o.kind))).toEqual(
      [],
    );
    for (const p of plansOf("deploy/k8s-plaintext")) {
      expect(p.env.TERN_SECURITY).toBeUndefined();
      expect(p.env.TERN_TLS_CERT_FILE).toBeUndefined();
      expect(loadServiceConfig(roleOf(p), [], p.env).authenticationRequired).toBe(false);
    }
  });
});

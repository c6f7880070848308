// The kubectl fault driver, offline: group → leader pod resolution, argument building, and
// real kubectl failures surfacing as clear errors (no cluster here: a kubeconfig pointing at
// a closed loopback port).
import { describe, expect, it } from "vitest";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  FaultError,
  deletePod,
  kubectlArgs,
  leaderPodOf,
  parsePortForward,
  podOfTarget,
  transactionGroupOf,
} from "../../scripts/k8s/kubectl-faults.js";
import type { ClusterMetadata } from "../../libs/metadata/types.js";

const metadata: ClusterMetadata = {
  version: "7",
  controllerLeader: 2,
  nodes: [],
  topics: [
    {
      name: "__transaction_state",
      internal: true,
      role: "coordinator",
      config: {},
      partitions: [
        {
          topic: "__transaction_state",
          partition: 11,
          replicas: [1, 2, 0],
          leader: 1,
          leaderTerm: 3,
        },
      ],
    },
    {
      name: "__consumer_offsets",
      internal: true,
      role: "broker",
      config: {},
      partitions: [
        {
          topic: "__consumer_offsets",
          partition: 7,
          replicas: [0, 1, 2],
          leader: -1,
          leaderTerm: 0,
        },
      ],
    },
    {
      name: "orders",
      internal: false,
      role: "broker",
      config: {},
      partitions: [
        { topic: "orders", partition: 0, replicas: [2, 0, 1], leader: 2, leaderTerm: 1 },
      ],
    },
  ],
};

describe("kubectl faults", () => {
  it("maps a transactional id to its coordinator's group with Kafka's partitioner", () => {
    expect(transactionGroupOf("my-txn-id")).toBe("__transaction_state/11");
    expect(transactionGroupOf("hello")).toBe("__transaction_state/22");
  });

  it("finds the pod leading a group: node id = pod ordinal of the topic's role", () => {
    expect(leaderPodOf(metadata, "__transaction_state/11")).toBe("tern-coordinator-1");
    expect(leaderPodOf(metadata, "orders/0")).toBe("tern-broker-2");
    expect(leaderPodOf(metadata, "__controller")).toBe("tern-controller-2");
    expect(() => leaderPodOf(metadata, "__consumer_offsets/7")).toThrow(/no known leader/);
    expect(() => leaderPodOf(metadata, "missing/0")).toThrow(FaultError);
  });

  it("resolves the chaos runner's targets to pods", () => {
    expect(podOfTarget({ kind: "node", role: "controller", id: 1 })).toBe("tern-controller-1");
    expect(
      podOfTarget(
        { kind: "leader", role: "coordinator", topic: "__transaction_state", partition: 11 },
        metadata,
      ),
    ).toBe("tern-coordinator-1");
    expect(() =>
      podOfTarget({ kind: "leader", role: "coordinator", topic: "orders", partition: 0 }, metadata),
    ).toThrow(/not a coordinator/);
    expect(() =>
      podOfTarget({ kind: "leader", role: "broker", topic: "orders", partition: 0 }),
    ).toThrow(/needs the cluster metadata/);
  });

  it("builds kubectl arguments with namespace, kubeconfig and context", () => {
    expect(
      kubectlArgs({ namespace: "tern", kubeconfig: "/k", context: "kind-tern" }, [
        "delete",
        "pod",
        "p",
      ]),
    ).toEqual([
      "--namespace",
      "tern",
      "--kubeconfig",
      "/k",
      "--context",
      "kind-tern",
      "delete",
      "pod",
      "p",
    ]);
  });

  it("reads the local port of a port-forward", () => {
    expect(
      parsePortForward(
        "Forwarding from 127.0.0.1:41234 -> 9090\nForwarding from [::1]:41234 -> 9090",
      ),
    ).toBe(41234);
    expect(parsePortForward("error: unable to forward")).toBeUndefined();
  });

  it("reports kubectl failures and a missing kubectl clearly", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "tern-kubeconfig-"));
    const kubeconfig = path.join(dir, "config");
    writeFileSync(
      kubeconfig,
      [
        "apiVersion: v1",
        "kind: Config",
        "current-context: closed",
        "clusters: [{name: closed, cluster: {server: 'https://127.0.0.1:1'}}]",
        "users: [{name: u, user: {token: x}}]",
        "contexts: [{name: closed, context: {cluster: closed, user: u}}]",
      ].join("\n"),
    );
    expect(() =>
      deletePod({ namespace: "tern", kubeconfig }, "tern-coordinator-0", { graceSeconds: 0 }),
    ).toThrow(/kubectl delete pod tern-coordinator-0 .*(refused|connect)/);
    expect(() => deletePod({ namespace: "tern", kubectl: "/nonexistent/kubectl" }, "p")).toThrow(
      /kubectl not found/,
    );
  });
});

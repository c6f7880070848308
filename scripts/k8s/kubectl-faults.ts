// Faults on a real Kubernetes cluster through kubectl, for the chaos runner and by hand:
// delete a pod (gracefully or with --grace-period=0), or delete the pod that currently leads
// a Raft group, found through the controller's metadata (the admin API) over a
// `kubectl port-forward`. Node ids are pod ordinals (deploy/k8s), so leader n of a role is
// pod tern-<role>-n.
//
//   node dist/scripts/k8s/kubectl-faults.js delete-pod tern-coordinator-1 [--grace 0]
//   node dist/scripts/k8s/kubectl-faults.js delete-leader --transactional-id my-txn [--grace 0]
//   node dist/scripts/k8s/kubectl-faults.js delete-leader --group __consumer_offsets/7
//   node dist/scripts/k8s/kubectl-faults.js delete-leader --controller
//   common: --namespace tern --kubeconfig PATH --context NAME --admin-address HOST:PORT --wait-ready
// Prints one JSON object on stdout; exits non-zero on failure.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import path from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath } from "node:url";
import { parseHostPort } from "../../libs/common/config.js";
import { TXN_LOG_PARTITIONS_DEFAULT, partitionFor } from "../../libs/common/hash.js";
import { silentLogger } from "../../libs/common/logger.js";
import { ControllerClient } from "../../libs/metadata/controller-client.js";
import { internalPartitionCount } from "../../libs/metadata/lookup.js";
import { TRANSACTION_STATE_TOPIC, type ClusterMetadata } from "../../libs/metadata/types.js";
import { processCredentials } from "../../libs/server/tls/credentials.js";

export interface KubectlTarget {
  readonly namespace: string;
  readonly kubeconfig?: string;
  readonly context?: string;
  /** The kubectl binary (default: $KUBECTL or "kubectl"). */
  readonly kubectl?: string;
}

export class FaultError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "FaultError";
  }
}

const KUBECTL_TIMEOUT_MS = 60_000;
const PORT_FORWARD_TIMEOUT_MS = 15_000;
const READY_POLL_MS = 1_000;
const CONTROLLER_PORT = 9090;

/** kubectl's global flags for a target, then the command's own arguments. */
export function kubectlArgs(target: KubectlTarget, args: readonly string[]): string[] {
  const global = ["--namespace", target.namespace];
  if (target.kubeconfig !== undefined) global.push("--kubeconfig", target.kubeconfig);
  if (target.context !== undefined) global.push("--context", target.context);
  return [...global, ...args];
}

function kubectlBinary(target: KubectlTarget): string {
  return target.kubectl ?? process.env.KUBECTL ?? "kubectl";
}

export function kubectl(target: KubectlTarget, args: readonly string[]): string {
  const result = spawnSync(kubectlBinary(target), kubectlArgs(target, args), {
    encoding: "utf8",
    timeout: KUBECTL_TIMEOUT_MS,
  });
  if (result.error !== undefined) {
    const missing = (result.error as NodeJS.ErrnoException).code === "ENOENT";
    throw new FaultError(
      missing
        ? `kubectl not found ("${kubectlBinary(target)}"): install it or set KUBECTL`
        : result.error.message,
    );
  }
  if (result.status !== 0)
    throw new FaultError(`kubectl ${args.join(" ")}: ${result.stderr.trim()}`);
  return result.stdout;
}

/** The Raft group that holds a transactional id's coordinator: __transaction_state/<partition> (of `partitions`, the topic's count in metadata). */
export function transactionGroupOf(
  transactionalId: string,
  partitions = TXN_LOG_PARTITIONS_DEFAULT,
): string {
  return `${TRANSACTION_STATE_TOPIC}/${partitionFor(transactionalId, partitions)}`;
}

/** The pod leading a group ("topic/partition" or "__controller") in a metadata view. */
export function leaderPodOf(metadata: ClusterMetadata, group: string): string {
  if (group === "__controller") {
    if (metadata.controllerLeader < 0) throw new FaultError("the controller quorum has no leader");
    return `tern-controller-${metadata.controllerLeader}`;
  }
  const slash = group.lastIndexOf("/");
  const topicName = group.slice(0, slash);
  const partition = Number(group.slice(slash + 1));
  const topic = metadata.topics.find((t) => t.name === topicName);
  const info = topic?.partitions.find((p) => p.partition === partition);
  if (topic === undefined || info === undefined)
    throw new FaultError(`no partition ${group} in the cluster metadata`);
  if (info.leader < 0) throw new FaultError(`${group} has no known leader`);
  return `tern-${topic.role}-${info.leader}`;
}

/** "Forwarding from 127.0.0.1:41234 -> 9090" → 41234. */
export function parsePortForward(line: string): number | undefined {
  const m = /Forwarding from 127\.0\.0\.1:(\d+) ->/.exec(line);
  return m ? Number(m[1]) : undefined;
}

/** Opens `kubectl port-forward` to a controller pod; resolves with the local port. */
export async function portForwardController(
  target: KubectlTarget,
  pod = "tern-controller-0",
): Promise<{ port: number; child: ChildProcess }> {
  const child = spawn(
    kubectlBinary(target),
    kubectlArgs(target, ["port-forward", `pod/${pod}`, `:${CONTROLLER_PORT}`]),
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  return new Promise((resolve, reject) => {
    let output = "";
    const timer = setTimeout(
      () =>
        fail(
          `kubectl port-forward gave no port within ${PORT_FORWARD_TIMEOUT_MS} ms: ${output.trim()}`,
        ),
      PORT_FORWARD_TIMEOUT_MS,
    );
    const fail = (message: string) => {
      clearTimeout(timer);
      child.kill();
      reject(new FaultError(message));
    };
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const port = parsePortForward(output);
      if (port !== undefined) {
        clearTimeout(timer);
        resolve({ port, child });
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.once("error", (e) => fail(e.message));
    child.once("exit", (code) => fail(`kubectl port-forward exited ${code}: ${output.trim()}`));
  });
}

/** Metadata from the admin API: at adminAddress, or through a port-forward to a controller. */
export async function clusterMetadata(
  target: KubectlTarget,
  adminAddress?: string,
): Promise<ClusterMetadata> {
  let forward: { port: number; child: ChildProcess } | undefined;
  const address =
    adminAddress !== undefined ? parseHostPort(adminAddress, "--admin-address") : undefined;
  if (address === undefined) forward = await portForwardController(target);
  const client = new ControllerClient({
    channelCredentials: processCredentials(),
    controllers: [
      { id: 0, host: address?.host ?? "127.0.0.1", port: address?.port ?? forward!.port },
    ],
    logger: silentLogger(),
    requestTimeoutMs: 5_000,
  });
  try {
    return await client.metadata();
  } finally {
    client.close();
    forward?.child.kill();
  }
}

export function deletePod(
  target: KubectlTarget,
  pod: string,
  options: { graceSeconds?: number } = {},
): void {
  const args = ["delete", "pod", pod, "--wait=false"];
  if (options.graceSeconds !== undefined) args.push(`--grace-period=${options.graceSeconds}`);
  if (options.graceSeconds === 0) args.push("--force");
  kubectl(target, args);
}

/** Polls until the pod (its replacement, for a StatefulSet) is Ready; returns the wait in ms. */
export async function waitPodReady(
  target: KubectlTarget,
  pod: string,
  timeoutMs: number,
): Promise<number> {
  const startMs = Date.now();
  while (Date.now() - startMs < timeoutMs) {
    try {
      const status = kubectl(target, [
        "get",
        "pod",
        pod,
        "-o",
        'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
      ]);
      if (status.trim() === "True") return Date.now() - startMs;
    } catch {
      // Not yet recreated.
    }
    await new Promise((r) => setTimeout(r, READY_POLL_MS));
  }
  throw new FaultError(`${pod} not Ready within ${timeoutMs} ms`);
}

/** Deletes the pod leading `group`; returns the pod's name. */
export async function deleteGroupLeader(
  target: KubectlTarget,
  group: string,
  options: { graceSeconds?: number; adminAddress?: string } = {},
): Promise<string> {
  const pod = leaderPodOf(await clusterMetadata(target, options.adminAddress), group);
  deletePod(target, pod, options);
  return pod;
}

/** The chaos runner's target shape (test/chaos/faults/fault-types.ts), structurally. */
export type PodTarget =
  | {
      readonly kind: "node";
      readonly role: "controller" | "broker" | "coordinator";
      readonly id: number;
    }
  | {
      readonly kind: "leader";
      readonly role: "broker" | "coordinator";
      readonly topic: string;
      readonly partition: number;
    };

/** The pod a target names; a leader target needs the current metadata. */
export function podOfTarget(target: PodTarget, metadata?: ClusterMetadata): string {
  if (target.kind === "node") return `tern-${target.role}-${target.id}`;
  if (metadata === undefined) throw new FaultError("a leader target needs the cluster metadata");
  const pod = leaderPodOf(metadata, `${target.topic}/${target.partition}`);
  if (!pod.startsWith(`tern-${target.role}-`))
    throw new FaultError(
      `${target.topic}/${target.partition} is led by ${pod}, not a ${target.role}`,
    );
  return pod;
}

const READY_TIMEOUT_MS = 300_000;

async function main(argv: readonly string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    options: {
      namespace: { type: "string", default: "tern" },
      kubeconfig: { type: "string" },
      context: { type: "string" },
      "admin-address": { type: "string" },
      grace: { type: "string" },
      group: { type: "string" },
      "transactional-id": { type: "string" },
      controller: { type: "boolean" },
      "wait-ready": { type: "boolean" },
    },
  });
  const target: KubectlTarget = {
    namespace: values.namespace!,
    ...(values.kubeconfig === undefined ? {} : { kubeconfig: values.kubeconfig }),
    ...(values.context === undefined ? {} : { context: values.context }),
  };
  const graceSeconds = values.grace === undefined ? undefined : Number(values.grace);
  const options = {
    ...(graceSeconds === undefined ? {} : { graceSeconds }),
    ...(values["admin-address"] === undefined ? {} : { adminAddress: values["admin-address"] }),
  };
  const [command, podArg] = positionals;
  const startMs = Date.now();
  let pod: string;
  let group: string | undefined;
  if (command === "delete-pod" && podArg !== undefined) {
    pod = podArg;
    deletePod(target, pod, options);
  } else if (command === "delete-leader") {
    const transactionalId = values["transactional-id"];
    group = values.controller ? "__controller" : values.group;
    if (group === undefined && transactionalId !== undefined) {
      // The id's partition counts modulo the topic the controller created, not a constant.
      const partitions = internalPartitionCount(
        await clusterMetadata(target, options.adminAddress),
        TRANSACTION_STATE_TOPIC,
      );
      if (partitions === undefined)
        throw new FaultError(`${TRANSACTION_STATE_TOPIC} is not in the cluster metadata yet`);
      group = transactionGroupOf(transactionalId, partitions);
    }
    if (group === undefined)
      throw new FaultError("delete-leader needs --group, --transactional-id or --controller");
    pod = await deleteGroupLeader(target, group, options);
  } else {
    throw new FaultError(
      "usage: kubectl-faults delete-pod POD | delete-leader --group G | --transactional-id ID | --controller [--grace S] [--wait-ready]",
    );
  }
  const readyMs = values["wait-ready"]
    ? await waitPodReady(target, pod, READY_TIMEOUT_MS)
    : undefined;
  process.stdout.write(
    JSON.stringify({
      fault: command,
      namespace: target.namespace,
      group,
      pod,
      graceSeconds,
      deletedAtMs: startMs,
      readyAfterMs: readyMs,
    }) + "\n",
  );
}

if (
  process.argv[1] !== undefined &&
  path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)
) {
  main(process.argv.slice(2)).catch((e: Error) => {
    process.stderr.write(`kubectl-faults: ${e.message}\n`);
    process.exit(1);
  });
}

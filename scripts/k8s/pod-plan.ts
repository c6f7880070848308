// Turns rendered StatefulSets into local process plans: for each pod ordinal, the container's
// command, args and environment exactly as the kubelet would build them (envFrom, env in
// order, downward-API fields, $(VAR) expansion, image ENTRYPOINT/CMD/ENV), then mapped onto
// one machine: every pod gets its own loopback address, pod DNS names become that address,
// 0.0.0.0 binds become it too, and volume mount paths become directories under a temp root.
// Pure: no processes, no file system.
import path from "node:path";
import { isStatefulSet, type Container, type K8sObject, type Workload } from "./manifest.js";
import { containerEnv, expandVars } from "./pod-env.js";

export class PlanError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PlanError";
  }
}

export interface ProbePlan {
  readonly kind: "startup" | "readiness" | "liveness";
  readonly type: "grpc" | "http" | "tcp";
  readonly host: string;
  readonly port: number;
  /** grpc: the health service name ("" = whole process); http: the path. */
  readonly target: string;
  readonly periodSeconds: number;
  readonly timeoutSeconds: number;
  readonly failureThreshold: number;
}

export interface PodPlan {
  readonly statefulSet: string;
  readonly podName: string;
  readonly ordinal: number;
  readonly ip: string;
  /** The pod's stable DNS name, <pod>.<service>.<namespace>.svc.cluster.local. */
  readonly fqdn: string;
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly cwd: string;
  /** Directories that stand in for the pod's volumes (to create before start). */
  readonly volumeDirs: readonly string[];
  readonly probes: readonly ProbePlan[];
  readonly preStopSleepSeconds: number;
  readonly terminationGracePeriodSeconds: number;
  /** The pod template's annotations (prometheus.io/port and path among them). */
  readonly annotations: Readonly<Record<string, string>>;
}

/** What the image contributes when the pod spec does not override it. */
export interface ImageDefaults {
  readonly entrypoint: readonly string[];
  readonly cmd: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly workingDir: string;
}

export interface PlanOptions {
  readonly objects: readonly K8sObject[];
  readonly image: ImageDefaults;
  /** The local directory that stands for the image's file system root of the app (workingDir). */
  readonly appDir: string;
  /** Where pod volumes live: <volumeRoot>/<pod>/<volume>. */
  readonly volumeRoot: string;
  /** Loopback address of the n-th pod (0-based across all planned pods). */
  readonly ipFor: (index: number) => string;
  /** Variables of the base image the process needs locally (PATH). */
  readonly hostEnv: Readonly<Record<string, string>>;
  /** Restrict to these StatefulSets (default: all). */
  readonly only?: readonly string[];
  readonly nodeName?: string;
  readonly clusterDomain?: string;
}

const PODS_MAX = 64;

interface PodIdentity {
  readonly set: Workload;
  readonly podName: string;
  readonly ordinal: number;
  readonly ip: string;
  readonly fqdn: string;
  readonly namespace: string;
}

export function planPods(options: PlanOptions): PodPlan[] {
  const sets = options.objects
    .filter(isStatefulSet)
    .filter((o) => options.only === undefined || options.only.includes(o.metadata.name));
  if (options.only !== undefined && sets.length !== options.only.length)
    throw new PlanError(`StatefulSets not found: ${options.only.join(", ")}`);
  const domain = options.clusterDomain ?? "cluster.local";
  const identities: PodIdentity[] = [];
  for (const set of sets) {
    const replicas: number = set.spec.replicas ?? 1;
    const namespace = set.metadata.namespace ?? "default";
    for (let ordinal = 0; ordinal < replicas; ordinal++) {
      if (identities.length >= PODS_MAX) throw new PlanError(`more than ${PODS_MAX} pods`);
      const podName = `${set.metadata.name}-${ordinal}`;
      const fqdn = `${podName}.${set.spec.serviceName}.${namespace}.svc.${domain}`;
      identities.push({
        set,
        podName,
        ordinal,
        ip: options.ipFor(identities.length),
        fqdn,
        namespace,
      });
    }
  }
  const rewrite = loopbackRewriter(identities);
  return identities.map((identity) => planPod(identity, options, rewrite));
}

/** Replaces every pod DNS name (full, .svc, <pod>.<service>.<ns>, <pod>.<service>) by its address. */
function loopbackRewriter(identities: readonly PodIdentity[]): (text: string) => string {
  const names: Array<[string, string]> = [];
  for (const id of identities) {
    const short = `${id.podName}.${id.set.spec.serviceName}`;
    for (const name of [id.fqdn, `${short}.${id.namespace}.svc`, `${short}.${id.namespace}`, short])
      names.push([name, id.ip]);
  }
  names.sort((a, b) => b[0].length - a[0].length);
  return (text) => {
    let out = text;
    for (const [name, ip] of names) out = out.split(name).join(ip);
    return out;
  };
}

function planPod(
  identity: PodIdentity,
  options: PlanOptions,
  rewrite: (text: string) => string,
): PodPlan {
  const { set, podName, ip } = identity;
  const pod = set.spec.template.spec!;
  const container = pod.containers[0];
  if (pod.containers.length !== 1)
    throw new PlanError(
      `${podName}: one container per pod is supported, found ${pod.containers.length}`,
    );
  const labels: Record<string, string> = {
    ...(set.spec.template.metadata?.labels ?? {}),
    "apps.kubernetes.io/pod-index": String(identity.ordinal),
    "statefulset.kubernetes.io/pod-name": podName,
  };
  const env = buildEnv(container, identity, labels, options);
  const mounts = volumeMap(container, podName, options.volumeRoot);
  const localize = (value: string) =>
    mapPaths(rewrite(value).replace(/\b0\.0\.0\.0:/g, `${ip}:`), mounts);
  const argv = commandLine(container, env, options.image).map(localize);
  if (argv[0] === "node") argv[0] = process.execPath;
  const localEnv: Record<string, string> = { ...options.hostEnv };
  for (const [name, value] of env) localEnv[name] = localize(value);
  const workingDir: string = container.workingDir ?? options.image.workingDir;
  if (workingDir !== options.image.workingDir)
    throw new PlanError(
      `${podName}: workingDir ${workingDir} is not the image's ${options.image.workingDir}`,
    );
  return {
    statefulSet: set.metadata.name,
    podName,
    ordinal: identity.ordinal,
    ip,
    fqdn: identity.fqdn,
    argv,
    env: localEnv,
    cwd: options.appDir,
    volumeDirs: [...mounts.values()],
    probes: probePlans(container, ip, podName),
    preStopSleepSeconds: container.lifecycle?.preStop?.sleep?.seconds ?? 0,
    terminationGracePeriodSeconds: pod.terminationGracePeriodSeconds ?? 30,
    annotations: { ...(set.spec.template.metadata?.annotations ?? {}) },
  };
}

function buildEnv(
  container: Container,
  identity: PodIdentity,
  labels: Record<string, string>,
  options: PlanOptions,
): Map<string, string> {
  const { vars, problems } = containerEnv(container, options.objects, identity.namespace);
  if (problems.length > 0)
    throw new PlanError(
      `${identity.podName}: ${problems.map((p) => `${p.name}: ${p.message}`).join("; ")}`,
    );
  const env = new Map<string, string>(Object.entries(options.image.env));
  env.set("HOSTNAME", identity.podName);
  for (const v of vars) {
    const source = v.source;
    let value: string;
    if (source.kind === "value") value = expandVars(source.value, env);
    else if (source.kind === "configMap") value = source.value ?? "";
    else if (source.kind === "field")
      value = fieldValue(source.fieldPath, identity, labels, options);
    else
      throw new PlanError(
        `${identity.podName}: ${v.name}: ${source.kind} sources are not supported locally`,
      );
    env.set(v.name, value);
  }
  return env;
}

function fieldValue(
  fieldPath: string,
  identity: PodIdentity,
  labels: Record<string, string>,
  options: PlanOptions,
): string {
  const label = /^metadata\.labels\['(.+)'\]$/.exec(fieldPath);
  if (label) {
    const value = labels[label[1]!];
    if (value === undefined)
      throw new PlanError(`${identity.podName}: label ${label[1]} is not set on the pod`);
    return value;
  }
  switch (fieldPath) {
    case "metadata.name":
      return identity.podName;
    case "metadata.namespace":
      return identity.namespace;
    case "spec.nodeName":
      return options.nodeName ?? "local-node";
    case "status.podIP":
      return identity.ip;
    case "status.hostIP":
      return "127.0.0.1";
    default:
      throw new PlanError(`${identity.podName}: fieldRef ${fieldPath} is not supported locally`);
  }
}

/** Kubernetes: command replaces ENTRYPOINT (and drops CMD); args replace CMD. */
function commandLine(
  container: Container,
  env: ReadonlyMap<string, string>,
  image: ImageDefaults,
): string[] {
  const command: string[] = container.command ?? [...image.entrypoint];
  const args: string[] = container.args ?? (container.command === undefined ? [...image.cmd] : []);
  const argv = [...command, ...args].map((a) => expandVars(String(a), env));
  if (argv.length === 0)
    throw new PlanError("the container has no command and the image no ENTRYPOINT/CMD");
  return argv;
}

function volumeMap(container: Container, podName: string, volumeRoot: string): Map<string, string> {
  const mounts = new Map<string, string>();
  for (const mount of container.volumeMounts ?? [])
    mounts.set(mount.mountPath.replace(/\/$/, ""), path.join(volumeRoot, podName, mount.name));
  return mounts;
}

/** A value that is, or lies under, a mount path is moved to the local stand-in directory. */
function mapPaths(value: string, mounts: ReadonlyMap<string, string>): string {
  const sorted = [...mounts.entries()].sort((a, b) => b[0].length - a[0].length);
  for (const [mountPath, local] of sorted) {
    if (value === mountPath) return local;
    if (value.startsWith(mountPath + "/")) return local + value.slice(mountPath.length);
  }
  return value;
}

const PROBE_KINDS = [
  ["startupProbe", "startup"],
  ["readinessProbe", "readiness"],
  ["livenessProbe", "liveness"],
] as const;

function probePlans(container: Container, ip: string, podName: string): ProbePlan[] {
  const ports: Array<{ name?: string; containerPort: number }> = container.ports ?? [];
  const resolvePort = (port: number | string): number => {
    if (typeof port === "number") return port;
    const named = ports.find((p) => p.name === port);
    if (named === undefined)
      throw new PlanError(`${podName}: probe port ${port} is not a named container port`);
    return named.containerPort;
  };
  const plans: ProbePlan[] = [];
  for (const [field, kind] of PROBE_KINDS) {
    const probe = container[field];
    if (probe === undefined) continue;
    const timing = {
      periodSeconds: probe.periodSeconds ?? 10,
      timeoutSeconds: probe.timeoutSeconds ?? 1,
      failureThreshold: probe.failureThreshold ?? 3,
    };
    if (probe.grpc)
      plans.push({
        kind,
        type: "grpc",
        host: ip,
        port: resolvePort(probe.grpc.port),
        target: probe.grpc.service ?? "",
        ...timing,
      });
    else if (probe.httpGet)
      plans.push({
        kind,
        type: "http",
        host: ip,
        port: resolvePort(probe.httpGet.port),
        target: probe.httpGet.path ?? "/",
        ...timing,
      });
    else if (probe.tcpSocket)
      plans.push({
        kind,
        type: "tcp",
        host: ip,
        port: resolvePort(probe.tcpSocket.port),
        target: "",
        ...timing,
      });
    else throw new PlanError(`${podName}: ${field} uses a handler not supported locally`);
  }
  return plans;
}

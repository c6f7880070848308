// The shape of rendered Kubernetes objects as the checks see them: plain JSON from YAML.
// Deliberately loose (unknown) below the few fields the checks read; the schema validator
// owns the full types.

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  spec?: unknown;
  data?: Record<string, string>;
  [field: string]: unknown;
}

// Structural types for what the checks read of each kind. Everything the API server would
// default or reject is optional here: the checks read rendered YAML, not validated objects.

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface ContainerPort {
  name?: string;
  containerPort: number;
}

export interface VolumeMount {
  name: string;
  mountPath: string;
  readOnly?: boolean;
  subPath?: string;
  subPathExpr?: string;
}

/** An env entry as written in a container (pod-env.ts's EnvVar is the resolved variable). */
export interface EnvEntry {
  name: string;
  value?: string | number | boolean;
  valueFrom?: {
    fieldRef?: { fieldPath: string };
    resourceFieldRef?: { resource: string };
    secretKeyRef?: { name: string; key: string };
    configMapKeyRef?: { name: string; key: string; optional?: boolean };
  };
}

export interface EnvFromSource {
  prefix?: string;
  configMapRef?: { name?: string; optional?: boolean };
}

export interface Probe {
  grpc?: { port: number | string; service?: string };
  httpGet?: { port: number | string; path?: string };
  tcpSocket?: { port: number | string };
  periodSeconds?: number;
  timeoutSeconds?: number;
  failureThreshold?: number;
}

export interface SecurityContext {
  runAsNonRoot?: boolean;
  runAsUser?: number;
  readOnlyRootFilesystem?: boolean;
  allowPrivilegeEscalation?: boolean;
  privileged?: boolean;
  capabilities?: { drop?: string[]; add?: string[] };
  seccompProfile?: { type?: string };
}

export interface Container {
  name: string;
  command?: string[];
  workingDir?: string;
  args?: string[];
  env?: EnvEntry[];
  envFrom?: EnvFromSource[];
  ports?: ContainerPort[];
  volumeMounts?: VolumeMount[];
  startupProbe?: Probe;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  securityContext?: SecurityContext;
  resources?: { limits?: { memory?: string | number }; requests?: { memory?: string | number } };
  lifecycle?: { preStop?: { sleep?: { seconds?: number } } };
}

export interface Volume {
  name: string;
  secret?: { secretName?: string };
  emptyDir?: unknown;
}

export interface PodAffinityTerm {
  topologyKey?: string;
  labelSelector?: LabelSelector;
}

export interface PodSpec {
  containers: Container[];
  volumes?: Volume[];
  securityContext?: SecurityContext;
  terminationGracePeriodSeconds?: number;
  affinity?: {
    podAntiAffinity?: {
      requiredDuringSchedulingIgnoredDuringExecution?: PodAffinityTerm[];
      preferredDuringSchedulingIgnoredDuringExecution?: Array<{ podAffinityTerm: PodAffinityTerm }>;
    };
  };
  topologySpreadConstraints?: Array<{ labelSelector?: LabelSelector }>;
}

export interface PodTemplate {
  metadata?: ObjectMeta;
  spec?: PodSpec;
}

/** StatefulSet, Deployment, ... : the fields of their specs the checks read. */
export interface Workload extends K8sObject {
  spec: {
    template: PodTemplate;
    selector?: LabelSelector;
    replicas?: number;
    serviceName?: string;
    podManagementPolicy?: string;
    persistentVolumeClaimRetentionPolicy?: unknown;
    volumeClaimTemplates?: Array<{ metadata?: ObjectMeta }>;
  };
}

export interface ServicePort {
  name?: string;
  port: number;
  targetPort?: number | string;
}

export interface Service extends K8sObject {
  spec?: {
    selector?: Record<string, string>;
    ports?: ServicePort[];
    clusterIP?: string;
    publishNotReadyAddresses?: boolean;
  };
}

export interface PodDisruptionBudget extends K8sObject {
  spec?: { selector?: LabelSelector; maxUnavailable?: number | string };
}

/** cert-manager.io/v1 Certificate. */
export interface Certificate extends K8sObject {
  spec?: { secretName?: string; uris?: string[]; dnsNames?: string[] };
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{
    key: string;
    operator: "In" | "NotIn" | "Exists" | "DoesNotExist";
    values?: string[];
  }>;
}

/** "StatefulSet/tern-broker" — how findings and errors name an object. */
export function objectRef(o: K8sObject): string {
  return `${o.kind}/${o.metadata?.name ?? "<unnamed>"}`;
}

export const WORKLOAD_KINDS: readonly string[] = [
  "StatefulSet",
  "Deployment",
  "DaemonSet",
  "ReplicaSet",
  "Job",
];

export function isWorkload(o: K8sObject): o is Workload {
  return (
    WORKLOAD_KINDS.includes(o.kind) &&
    (o.spec as Workload["spec"] | undefined)?.template !== undefined
  );
}

// Narrowing by kind alone, as the code did before these types: the API server requires a
// StatefulSet's spec (and its template), so the checks read them without looking first.

export function isStatefulSet(o: K8sObject): o is Workload {
  return o.kind === "StatefulSet";
}

export function isService(o: K8sObject): o is Service {
  return o.kind === "Service";
}

export function isPodDisruptionBudget(o: K8sObject): o is PodDisruptionBudget {
  return o.kind === "PodDisruptionBudget";
}

export function isCertificate(o: K8sObject): o is Certificate {
  return o.apiVersion === "cert-manager.io/v1" && o.kind === "Certificate";
}

/** Kubernetes label-selector semantics; an empty selector matches everything. */
export function selectorMatches(
  selector: LabelSelector | undefined,
  labels: Record<string, string> | undefined,
): boolean {
  if (selector === undefined) return false;
  const have = labels ?? {};
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (have[key] !== value) return false;
  }
  for (const expression of selector.matchExpressions ?? []) {
    const present = Object.prototype.hasOwnProperty.call(have, expression.key);
    const values = expression.values ?? [];
    const ok =
      expression.operator === "In"
        ? present && values.includes(have[expression.key]!)
        : expression.operator === "NotIn"
          ? !present || !values.includes(have[expression.key]!)
          : expression.operator === "Exists"
            ? present
            : expression.operator === "DoesNotExist"
              ? !present
              : false;
    if (!ok) return false;
  }
  return true;
}

/** A Service's plain map selector as a LabelSelector. */
export function mapSelector(
  selector: Record<string, string> | undefined,
): LabelSelector | undefined {
  return selector === undefined ? undefined : { matchLabels: selector };
}

export function sameNamespace(a: K8sObject, b: K8sObject): boolean {
  return (a.metadata.namespace ?? "default") === (b.metadata.namespace ?? "default");
}

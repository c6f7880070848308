// The shape of rendered Kubernetes objects as the checks see them: plain JSON from YAML.
// Deliberately loose (unknown) below the few fields the checks read; the schema validator
// owns the full types.

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: any;
  data?: Record<string, string>;
  [field: string]: unknown;
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: Array<{ key: string; operator: "In" | "NotIn" | "Exists" | "DoesNotExist"; values?: string[] }>;
}

/** "StatefulSet/tern-broker" — how findings and errors name an object. */
export function objectRef(o: K8sObject): string {
  return `${o.kind}/${o.metadata?.name ?? "<unnamed>"}`;
}

export const WORKLOAD_KINDS: readonly string[] = ["StatefulSet", "Deployment", "DaemonSet", "ReplicaSet", "Job"];

export function isWorkload(o: K8sObject): boolean {
  return WORKLOAD_KINDS.includes(o.kind) && o.spec?.template !== undefined;
}

/** Kubernetes label-selector semantics; an empty selector matches everything. */
export function selectorMatches(selector: LabelSelector | undefined, labels: Record<string, string> | undefined): boolean {
  if (selector === undefined) return false;
  const have = labels ?? {};
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (have[key] !== value) return false;
  }
  for (const expression of selector.matchExpressions ?? []) {
    const present = Object.prototype.hasOwnProperty.call(have, expression.key);
    const values = expression.values ?? [];
    const ok =
      expression.operator === "In" ? present && values.includes(have[expression.key]!)
      : expression.operator === "NotIn" ? !present || !values.includes(have[expression.key]!)
      : expression.operator === "Exists" ? present
      : expression.operator === "DoesNotExist" ? !present
      : false;
    if (!ok) return false;
  }
  return true;
}

/** A Service's plain map selector as a LabelSelector. */
export function mapSelector(selector: Record<string, string> | undefined): LabelSelector | undefined {
  return selector === undefined ? undefined : { matchLabels: selector };
}

export function sameNamespace(a: K8sObject, b: K8sObject): boolean {
  return (a.metadata.namespace ?? "default") === (b.metadata.namespace ?? "default");
}

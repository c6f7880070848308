// What a container's environment is made of, statically: each variable with its source, and
// Kubernetes' $(VAR) expansion. Shared by the lint (static checks) and the local pod runner.
import type { Container, EnvEntry, K8sObject } from "./manifest.js";

export type EnvSource =
  | { kind: "value"; value: string }
  | { kind: "field"; fieldPath: string }
  | { kind: "resource"; resource: string }
  | { kind: "configMap"; configMap: string; key: string; value: string | undefined }
  | { kind: "secret"; secret: string; key: string };

export interface EnvVar {
  readonly name: string;
  readonly source: EnvSource;
}

export interface EnvProblem {
  readonly name: string;
  readonly message: string;
}

/** envFrom first, then env (env wins on a clash), as the kubelet builds it. */
export function containerEnv(
  container: Container,
  objects: readonly K8sObject[],
  namespace: string | undefined,
): { vars: EnvVar[]; problems: EnvProblem[] } {
  const vars = new Map<string, EnvVar>();
  const problems: EnvProblem[] = [];
  for (const source of container.envFrom ?? []) {
    const name: string | undefined = source.configMapRef?.name;
    if (name === undefined) continue;
    const configMap = findConfigMap(objects, name, namespace);
    if (configMap === undefined) {
      if (source.configMapRef?.optional !== true)
        problems.push({ name: `envFrom ${name}`, message: `ConfigMap ${name} does not exist` });
      continue;
    }
    for (const [key, value] of Object.entries(configMap.data ?? {})) {
      const prefixed = `${source.prefix ?? ""}${key}`;
      vars.set(prefixed, {
        name: prefixed,
        source: { kind: "configMap", configMap: name, key, value },
      });
    }
  }
  for (const entry of container.env ?? []) {
    const source = envEntrySource(entry, objects, namespace, problems);
    if (source !== undefined) vars.set(entry.name, { name: entry.name, source });
  }
  return { vars: [...vars.values()], problems };
}

function envEntrySource(
  entry: EnvEntry,
  objects: readonly K8sObject[],
  namespace: string | undefined,
  problems: EnvProblem[],
): EnvSource | undefined {
  if (entry.valueFrom === undefined) return { kind: "value", value: String(entry.value ?? "") };
  const from = entry.valueFrom;
  if (from.fieldRef !== undefined) return { kind: "field", fieldPath: from.fieldRef.fieldPath };
  if (from.resourceFieldRef !== undefined)
    return { kind: "resource", resource: from.resourceFieldRef.resource };
  if (from.secretKeyRef !== undefined)
    return { kind: "secret", secret: from.secretKeyRef.name, key: from.secretKeyRef.key };
  if (from.configMapKeyRef !== undefined) {
    const { name, key } = from.configMapKeyRef;
    const configMap = findConfigMap(objects, name, namespace);
    const value = configMap?.data?.[key];
    if (value === undefined && from.configMapKeyRef.optional !== true) {
      problems.push({ name: entry.name, message: `ConfigMap ${name} has no key ${key}` });
    }
    return { kind: "configMap", configMap: name, key, value };
  }
  problems.push({ name: entry.name, message: "valueFrom has no known source" });
  return undefined;
}

function findConfigMap(
  objects: readonly K8sObject[],
  name: string,
  namespace: string | undefined,
): K8sObject | undefined {
  return objects.find(
    (o) =>
      o.kind === "ConfigMap" &&
      o.metadata.name === name &&
      (o.metadata.namespace ?? namespace) === namespace,
  );
}

/**
 * Kubernetes' dependent-variable expansion: $(NAME) is replaced by an earlier-defined
 * variable's value, $$ escapes, and an unresolvable reference stays as written.
 */
export function expandVars(text: string, defined: ReadonlyMap<string, string>): string {
  return text.replace(
    /\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g,
    (match, name: string | undefined) => {
      if (name === undefined) return "$";
      const value = defined.get(name);
      return value === undefined ? match : value;
    },
  );
}

/** Names referenced as $(NAME) in a text. */
export function referencedVars(text: string): string[] {
  const names: string[] = [];
  for (const m of text.replace(/\$\$/g, "").matchAll(/\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)/g))
    names.push(m[1]!);
  return names;
}

// Where a ClusterIP Service would route, for local pod plans: the planned pods whose
// StatefulSet template labels match the Service's selector, each at the container port the
// Service's targetPort names. Pure; lets tests run a documented `--bootstrap <service>:<port>`
// command against the pods the Service really selects.
import {
  isService,
  isStatefulSet,
  mapSelector,
  sameNamespace,
  selectorMatches,
  type K8sObject,
} from "./manifest.js";
import type { PodPlan } from "./pod-plan.js";

export interface ServiceEndpoint {
  readonly podName: string;
  /** ip:port of the pod behind the Service port. */
  readonly address: string;
}

/** The endpoints behind port `port` of Service `name`; throws when the Service or the port does not exist. */
export function serviceEndpoints(
  objects: readonly K8sObject[],
  plans: readonly PodPlan[],
  name: string,
  port: number,
): ServiceEndpoint[] {
  const service = objects.filter(isService).find((o) => o.metadata.name === name);
  if (service === undefined) throw new Error(`no Service ${name}`);
  const servicePort = (service.spec?.ports ?? []).find((p) => p.port === port);
  if (servicePort === undefined) throw new Error(`Service ${name} has no port ${port}`);
  const target: string | number = servicePort.targetPort ?? servicePort.port;
  const out: ServiceEndpoint[] = [];
  for (const set of objects.filter(isStatefulSet).filter((o) => sameNamespace(o, service))) {
    if (!selectorMatches(mapSelector(service.spec?.selector), set.spec.template.metadata?.labels))
      continue;
    const ports: Array<{ name?: string; containerPort: number }> = (
      set.spec.template.spec?.containers ?? []
    ).flatMap((c) => c.ports ?? []);
    const containerPort =
      typeof target === "number" ? target : ports.find((p) => p.name === target)?.containerPort;
    if (containerPort === undefined) continue;
    for (const plan of plans.filter((p) => p.statefulSet === set.metadata.name))
      out.push({ podName: plan.podName, address: `${plan.ip}:${containerPort}` });
  }
  return out;
}

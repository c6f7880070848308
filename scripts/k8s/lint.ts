// Semantic lint of rendered manifests: the cross-object facts no schema can see. Every check
// is a pure function (objects in, findings out); lintManifests runs them all.
import { OPTIONS, parseHostPort, parsePeers } from "../../libs/common/config.js";
import { CHECKSUM_ANNOTATION, templateConfigChecksum } from "./config-checksum.js";
import {
  isPodDisruptionBudget,
  isService,
  isStatefulSet,
  isWorkload,
  mapSelector,
  objectRef,
  sameNamespace,
  selectorMatches,
  type Container,
  type ContainerPort,
  type K8sObject,
  type PodSpec,
  type Workload,
} from "./manifest.js";
import { containerEnv, expandVars, referencedVars, type EnvVar } from "./pod-env.js";
import { checkTls } from "./tls-lint.js";

export interface Finding {
  readonly check: string;
  readonly object: string;
  readonly message: string;
}

export type Check = (objects: readonly K8sObject[]) => Finding[];

/** Environment variables a tern service cannot start well without (no safe default in a pod). */
export const REQUIRED_ENV: readonly string[] = [
  "TERN_NODE_ID",
  "TERN_LISTEN",
  "TERN_ADVERTISE",
  "TERN_METRICS_LISTEN",
  "TERN_DATA_DIR",
  "TERN_CONTROLLERS",
];
const ROLE_COMMAND = /dist\/services\/(controller|broker|coordinator)\/main\.js$/;
const HEAP_RATIO_MIN = 0.5;
const HEAP_RATIO_MAX = 0.85;
/** libs/server/run-service.ts exits hard this long after the shutdown budget is spent. */
const HARD_EXIT_GRACE_S = 5;
const SHUTDOWN_SLACK_S = 5;

interface TernContainer {
  readonly workload: Workload;
  readonly container: Container;
  readonly role: string;
  readonly env: Map<string, EnvVar>;
}

const statefulSets = (objects: readonly K8sObject[]) => objects.filter(isStatefulSet);
const workloads = (objects: readonly K8sObject[]) => objects.filter(isWorkload);

/** Containers that run a tern service, found by their command, with their environment. */
export function ternContainers(objects: readonly K8sObject[]): TernContainer[] {
  const found: TernContainer[] = [];
  for (const workload of workloads(objects)) {
    for (const container of workload.spec.template.spec?.containers ?? []) {
      const argv: string[] = [...(container.command ?? []), ...(container.args ?? [])];
      const match = argv.map((a) => ROLE_COMMAND.exec(a)).find((m) => m !== null);
      if (!match) continue;
      const { vars } = containerEnv(container, objects, workload.metadata.namespace);
      found.push({
        workload,
        container,
        role: match[1]!,
        env: new Map(vars.map((v) => [v.name, v])),
      });
    }
  }
  return found;
}

function literal(env: Map<string, EnvVar>, name: string): string | undefined {
  const v = env.get(name)?.source;
  if (v?.kind === "value") return v.value;
  if (v?.kind === "configMap") return v.value;
  return undefined;
}

function finding(check: string, o: K8sObject, message: string): Finding {
  return { check, object: objectRef(o), message };
}

export const checkStatefulSetPolicy: Check = (objects) =>
  statefulSets(objects).flatMap((s) => {
    const out: Finding[] = [];
    if (s.spec.podManagementPolicy !== "Parallel")
      out.push(
        finding(
          "statefulset-policy",
          s,
          "podManagementPolicy must be Parallel: Raft members start together",
        ),
      );
    if (s.spec.persistentVolumeClaimRetentionPolicy === undefined)
      out.push(finding("statefulset-policy", s, "persistentVolumeClaimRetentionPolicy is not set"));
    if ((s.spec.volumeClaimTemplates ?? []).length === 0)
      out.push(
        finding(
          "statefulset-policy",
          s,
          "no volumeClaimTemplates: the log would not survive a restart",
        ),
      );
    return out;
  });

export const checkSelectorMatchesTemplate: Check = (objects) =>
  workloads(objects)
    .filter((w) => !selectorMatches(w.spec.selector, w.spec.template.metadata?.labels))
    .map((w) =>
      finding(
        "selector-matches-template",
        w,
        `spec.selector ${JSON.stringify(w.spec.selector)} does not match the pod template labels`,
      ),
    );

export const checkServiceNameHeadless: Check = (objects) =>
  statefulSets(objects).flatMap((s) => {
    const service = objects
      .filter(isService)
      .find((o) => o.metadata.name === s.spec.serviceName && sameNamespace(o, s));
    if (service === undefined)
      return [
        finding("service-name-headless", s, `serviceName "${s.spec.serviceName}" names no Service`),
      ];
    const out: Finding[] = [];
    if (service.spec?.clusterIP !== "None")
      out.push(
        finding(
          "service-name-headless",
          s,
          `Service ${service.metadata.name} is not headless (clusterIP: None)`,
        ),
      );
    if (service.spec?.publishNotReadyAddresses !== true)
      out.push(
        finding(
          "service-name-headless",
          s,
          `Service ${service.metadata.name} must set publishNotReadyAddresses: true so peers find each other before ready`,
        ),
      );
    if (!selectorMatches(mapSelector(service.spec?.selector), s.spec.template.metadata?.labels))
      out.push(
        finding(
          "service-name-headless",
          s,
          `Service ${service.metadata.name} does not select this StatefulSet's pods`,
        ),
      );
    return out;
  });

export const checkServicesSelectPods: Check = (objects) =>
  objects
    .filter(isService)
    .filter((o) => o.spec?.selector !== undefined)
    .flatMap((service) => {
      const spec = service.spec!;
      const targets = workloads(objects).filter(
        (w) =>
          sameNamespace(w, service) &&
          selectorMatches(mapSelector(spec.selector), w.spec.template.metadata?.labels),
      );
      if (targets.length === 0)
        return [
          finding(
            "service-selects-pods",
            service,
            `selector ${JSON.stringify(spec.selector)} matches no pod template`,
          ),
        ];
      const out: Finding[] = [];
      for (const port of spec.ports ?? []) {
        const target = port.targetPort ?? port.port;
        for (const w of targets) {
          if (!containerPortsOf(w).some((p) => p.name === target || p.containerPort === target)) {
            out.push(
              finding(
                "service-selects-pods",
                service,
                `port ${port.name ?? port.port}: targetPort ${target} is not a container port of ${objectRef(w)}`,
              ),
            );
          }
        }
      }
      return out;
    });

/**
 * The Service clients start from (component label "bootstrap") must select the controllers and
 * only them: every client and tool bootstraps from the Controller service (Metadata, then the
 * per-pod addresses it lists), which brokers and coordinators do not serve.
 */
export const checkBootstrapService: Check = (objects) =>
  objects
    .filter(isService)
    .filter((o) => o.metadata.labels?.["app.kubernetes.io/component"] === "bootstrap")
    .flatMap((service) => {
      const selected = ternContainers(objects).filter(
        (t) =>
          sameNamespace(t.workload, service) &&
          selectorMatches(
            mapSelector(service.spec?.selector),
            t.workload.spec.template.metadata?.labels,
          ),
      );
      const wrong = selected.filter((t) => t.role !== "controller");
      const out = wrong.map((t) =>
        finding(
          "bootstrap-service",
          service,
          `selects ${objectRef(t.workload)} (${t.role}s), but clients bootstrap from controllers`,
        ),
      );
      if (!selected.some((t) => t.role === "controller"))
        out.push(
          finding(
            "bootstrap-service",
            service,
            "selects no controller pods: clients bootstrap from controllers",
          ),
        );
      return out;
    });

function containerPortsOf(w: Workload): ContainerPort[] {
  return (w.spec.template.spec?.containers ?? []).flatMap((c) => c.ports ?? []);
}

const PROBES = ["startupProbe", "readinessProbe", "livenessProbe"] as const;

export const checkProbePorts: Check = (objects) =>
  workloads(objects).flatMap((w) =>
    (w.spec.template.spec?.containers ?? []).flatMap((c) =>
      PROBES.flatMap((kind) => {
        const probe = c[kind];
        if (probe === undefined) return [];
        const port = probe.grpc?.port ?? probe.httpGet?.port ?? probe.tcpSocket?.port;
        if (port === undefined) return [];
        const ports: Array<{ name?: string; containerPort: number }> = c.ports ?? [];
        const ok =
          typeof port === "number"
            ? ports.some((p) => p.containerPort === port)
            : ports.some((p) => p.name === port);
        return ok
          ? []
          : [
              finding(
                "probe-ports",
                w,
                `container ${c.name}: ${kind} port ${port} is not among its container ports`,
              ),
            ];
      }),
    ),
  );

export const checkProbesPresent: Check = (objects) =>
  ternContainers(objects).flatMap(({ workload, container }) =>
    PROBES.filter((kind) => container[kind] === undefined).map((kind) =>
      finding("probes-present", workload, `container ${container.name} has no ${kind}`),
    ),
  );

export const checkPdbSelectsWorkload: Check = (objects) =>
  objects.filter(isPodDisruptionBudget).flatMap((pdb) => {
    const matched = workloads(objects).filter(
      (w) =>
        sameNamespace(w, pdb) &&
        selectorMatches(pdb.spec?.selector, w.spec.template.metadata?.labels),
    );
    const out: Finding[] = [];
    if (matched.length === 0)
      out.push(
        finding(
          "pdb-selects-workload",
          pdb,
          `selector ${JSON.stringify(pdb.spec?.selector)} matches no workload's pods`,
        ),
      );
    if (matched.length > 1)
      out.push(
        finding(
          "pdb-selects-workload",
          pdb,
          `selector matches ${matched.length} workloads; one budget per role`,
        ),
      );
    if (pdb.spec?.maxUnavailable !== 1)
      out.push(
        finding(
          "pdb-selects-workload",
          pdb,
          "maxUnavailable must be 1: a 3-replica Raft group survives one voluntary disruption",
        ),
      );
    return out;
  });

export const checkEveryStatefulSetHasPdb: Check = (objects) =>
  statefulSets(objects)
    .filter(
      (s) =>
        !objects
          .filter(isPodDisruptionBudget)
          .some(
            (o) =>
              sameNamespace(o, s) &&
              selectorMatches(o.spec?.selector, s.spec.template.metadata?.labels),
          ),
    )
    .map((s) =>
      finding("pdb-selects-workload", s, "no PodDisruptionBudget covers this StatefulSet"),
    );

const KNOWN_ENV = new Set(OPTIONS.map((o) => o.env));

export const checkConfigEnv: Check = (objects) =>
  ternContainers(objects).flatMap(({ workload, container, env }) => {
    const out: Finding[] = [];
    const { problems } = containerEnv(container, objects, workload.metadata.namespace);
    for (const p of problems)
      out.push(
        finding("config-env", workload, `container ${container.name}: ${p.name}: ${p.message}`),
      );
    for (const name of REQUIRED_ENV) {
      if (!env.has(name) && !flagGiven(container, name))
        out.push(
          finding("config-env", workload, `container ${container.name}: ${name} is not set`),
        );
    }
    for (const name of env.keys()) {
      if (name.startsWith("TERN_") && !KNOWN_ENV.has(name))
        out.push(
          finding(
            "config-env",
            workload,
            `container ${container.name}: ${name} is not a tern setting (typo?)`,
          ),
        );
    }
    const flags = new Set(OPTIONS.map((o) => `--${o.flag}`));
    for (const arg of container.args ?? []) {
      const flag = String(arg).split("=")[0]!;
      if (flag.startsWith("--") && !flags.has(flag))
        out.push(
          finding(
            "config-env",
            workload,
            `container ${container.name}: argument ${flag} is not a tern flag: the service would exit at start`,
          ),
        );
    }
    const defined = new Set<string>();
    for (const entry of [...(container.env ?? [])]) {
      for (const ref of referencedVars(String(entry.value ?? ""))) {
        if (!defined.has(ref) && !env.has(ref))
          out.push(
            finding(
              "config-env",
              workload,
              `container ${container.name}: ${entry.name} references $(${ref}), which is not defined`,
            ),
          );
        else if (!defined.has(ref))
          out.push(
            finding(
              "config-env",
              workload,
              `container ${container.name}: ${entry.name} references $(${ref}) before it is defined: Kubernetes leaves it unexpanded`,
            ),
          );
      }
      defined.add(entry.name);
    }
    return out;
  });

function flagGiven(container: Container, envName: string): boolean {
  const flag = OPTIONS.find((o) => o.env === envName)?.flag;
  const args: string[] = [...(container.command ?? []), ...(container.args ?? [])];
  return flag !== undefined && args.some((a) => a === `--${flag}` || a.startsWith(`--${flag}=`));
}

/** A literal env value with $(VAR) references replaced by placeholders, for shape checks. */
function shaped(env: Map<string, EnvVar>, name: string): string | undefined {
  const value = literal(env, name);
  return value === undefined
    ? undefined
    : expandVars(
        value,
        new Map([
          ["POD_NAMESPACE", "ns"],
          ["POD_NAME", "pod-0"],
        ]),
      );
}

function namedPort(container: Container, name: string): number | undefined {
  return (container.ports ?? []).find((p) => p.name === name)?.containerPort;
}

export const checkListenPorts: Check = (objects) =>
  ternContainers(objects).flatMap(({ workload, container, env }) => {
    const out: Finding[] = [];
    const grpcPort = namedPort(container, "grpc");
    const metricsPort = namedPort(container, "metrics");
    if (grpcPort === undefined)
      out.push(
        finding("listen-ports", workload, `container ${container.name} has no port named grpc`),
      );
    if (metricsPort === undefined)
      out.push(
        finding("listen-ports", workload, `container ${container.name} has no port named metrics`),
      );
    const expectPort = (name: string, port: number | undefined) => {
      const value = shaped(env, name);
      if (value === undefined || port === undefined) return;
      try {
        const parsed = parseHostPort(value, name);
        if (parsed.port !== port)
          out.push(
            finding(
              "listen-ports",
              workload,
              `${name} port ${parsed.port} differs from the container port ${port}`,
            ),
          );
      } catch (e) {
        out.push(finding("listen-ports", workload, (e as Error).message));
      }
    };
    expectPort("TERN_LISTEN", grpcPort);
    expectPort("TERN_ADVERTISE", grpcPort);
    expectPort("TERN_METRICS_LISTEN", metricsPort);
    const listenHost = shaped(env, "TERN_LISTEN")?.split(":")[0];
    if (listenHost !== undefined && listenHost !== "0.0.0.0" && listenHost !== "[::]")
      out.push(
        finding(
          "listen-ports",
          workload,
          `TERN_LISTEN binds ${listenHost}: kubelet probes and peers reach the pod IP, bind 0.0.0.0`,
        ),
      );
    const advertise = shaped(env, "TERN_ADVERTISE");
    if (
      workload.kind === "StatefulSet" &&
      advertise !== undefined &&
      !advertise.startsWith(`pod-0.${workload.spec.serviceName}.`)
    ) {
      out.push(
        finding(
          "listen-ports",
          workload,
          `TERN_ADVERTISE must be the pod's stable name $(POD_NAME).${workload.spec.serviceName}.<ns>...: got ${literal(env, "TERN_ADVERTISE")}`,
        ),
      );
    }
    const annotated = workload.spec.template.metadata?.annotations?.["prometheus.io/port"];
    if (metricsPort !== undefined && annotated !== String(metricsPort))
      out.push(
        finding(
          "listen-ports",
          workload,
          `prometheus.io/port annotation ${annotated} differs from the metrics port ${metricsPort}`,
        ),
      );
    return out;
  });

export const checkControllersList: Check = (objects) => {
  const controller = ternContainers(objects).find((t) => t.role === "controller");
  if (controller === undefined) return [];
  const set = controller.workload;
  const replicas: number = set.spec.replicas ?? 1;
  const port = namedPort(controller.container, "grpc");
  return ternContainers(objects).flatMap(({ workload, env }) => {
    const value = shaped(env, "TERN_CONTROLLERS");
    if (value === undefined) return [];
    let peers;
    try {
      peers = parsePeers(value, "TERN_CONTROLLERS");
    } catch (e) {
      return [finding("controllers-list", workload, (e as Error).message)];
    }
    const out: Finding[] = [];
    if (peers.length !== replicas)
      out.push(
        finding(
          "controllers-list",
          workload,
          `TERN_CONTROLLERS lists ${peers.length} controllers; ${objectRef(set)} runs ${replicas}`,
        ),
      );
    peers.forEach((peer, index) => {
      const host = `${set.metadata.name}-${peer.id}.${set.spec.serviceName}.`;
      if (peer.id !== index || !peer.host.startsWith(host) || peer.port !== port) {
        out.push(
          finding(
            "controllers-list",
            workload,
            `TERN_CONTROLLERS entry ${index} (${peer.id}@${peer.host}:${peer.port}) is not ${index}@${host}<ns>...:${port}`,
          ),
        );
      }
    });
    return out;
  });
};

export const checkDataVolume: Check = (objects) =>
  ternContainers(objects).flatMap(({ workload, container, env }) => {
    const dataDir = literal(env, "TERN_DATA_DIR");
    if (dataDir === undefined) return [];
    const claims: Array<string | undefined> = (workload.spec.volumeClaimTemplates ?? []).map(
      (t) => t.metadata?.name,
    );
    const mount = (container.volumeMounts ?? []).find(
      (m) => dataDir === m.mountPath || dataDir.startsWith(`${m.mountPath.replace(/\/$/, "")}/`),
    );
    if (mount === undefined)
      return [
        finding(
          "data-volume",
          workload,
          `TERN_DATA_DIR ${dataDir} is on no volume mount: the root filesystem is read-only`,
        ),
      ];
    if (!claims.includes(mount.name))
      return [
        finding(
          "data-volume",
          workload,
          `TERN_DATA_DIR ${dataDir} is on volume ${mount.name}, which is not a volumeClaimTemplate: data would not persist`,
        ),
      ];
    return [];
  });

export const checkSecurityContext: Check = (objects) =>
  workloads(objects).flatMap((w) => {
    const pod: Partial<PodSpec> = w.spec.template.spec ?? {};
    const podSc = pod.securityContext ?? {};
    return (pod.containers ?? []).flatMap((c) => {
      const sc = c.securityContext ?? {};
      const problems: string[] = [];
      if ((sc.runAsNonRoot ?? podSc.runAsNonRoot) !== true)
        problems.push("runAsNonRoot is not true");
      if ((sc.runAsUser ?? podSc.runAsUser) === 0) problems.push("runAsUser is 0");
      if (sc.readOnlyRootFilesystem !== true) problems.push("readOnlyRootFilesystem is not true");
      if (sc.allowPrivilegeEscalation !== false)
        problems.push("allowPrivilegeEscalation is not false");
      if (sc.privileged === true) problems.push("privileged");
      if (!(sc.capabilities?.drop ?? []).includes("ALL"))
        problems.push("capabilities do not drop ALL");
      if ((sc.capabilities?.add ?? []).length > 0) problems.push("capabilities are added");
      if ((sc.seccompProfile ?? podSc.seccompProfile)?.type !== "RuntimeDefault")
        problems.push("seccompProfile is not RuntimeDefault");
      const tmp = (c.volumeMounts ?? []).find((m) => m.mountPath === "/tmp");
      const tmpVolume = (pod.volumes ?? []).find((v) => v.name === tmp?.name);
      if (tmpVolume?.emptyDir === undefined)
        problems.push("/tmp is not an emptyDir mount (the root filesystem is read-only)");
      return problems.map((p) => finding("security-context", w, `container ${c.name}: ${p}`));
    });
  });

const QUANTITY_UNITS: Record<string, number> = {
  "": 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 1024,
  Mi: 1024 ** 2,
  Gi: 1024 ** 3,
  Ti: 1024 ** 4,
};

/** Bytes in a Kubernetes memory quantity ("512Mi", "1G", "1048576"); undefined when malformed. */
export function quantityBytes(quantity: string | number | undefined): number | undefined {
  if (quantity === undefined) return undefined;
  const m = /^(\d+(?:\.\d+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$/.exec(String(quantity));
  return m ? Number(m[1]) * QUANTITY_UNITS[m[2] ?? ""]! : undefined;
}

export const checkHeapVsMemory: Check = (objects) =>
  ternContainers(objects).flatMap(({ workload, container, env }) => {
    const limitBytes = quantityBytes(container.resources?.limits?.memory);
    if (limitBytes === undefined)
      return [
        finding("heap-vs-memory", workload, `container ${container.name} has no memory limit`),
      ];
    if (container.resources?.requests?.memory === undefined)
      return [
        finding("heap-vs-memory", workload, `container ${container.name} has no memory request`),
      ];
    const heap = /--max-old-space-size=(\d+)/.exec(literal(env, "NODE_OPTIONS") ?? "");
    if (!heap)
      return [
        finding(
          "heap-vs-memory",
          workload,
          `container ${container.name}: NODE_OPTIONS sets no --max-old-space-size; Node 20 sizes its heap from the host, not the limit`,
        ),
      ];
    const ratio = (Number(heap[1]) * 1024 * 1024) / limitBytes;
    if (ratio < HEAP_RATIO_MIN || ratio > HEAP_RATIO_MAX) {
      return [
        finding(
          "heap-vs-memory",
          workload,
          `container ${container.name}: heap ${heap[1]} MiB is ${(ratio * 100).toFixed(0)}% of the memory limit; keep it within ${HEAP_RATIO_MIN * 100}-${HEAP_RATIO_MAX * 100}%`,
        ),
      ];
    }
    return [];
  });

export const checkTerminationGrace: Check = (objects) =>
  ternContainers(objects).flatMap(({ workload, container, env }) => {
    const graceS: number = workload.spec.template.spec?.terminationGracePeriodSeconds ?? 30;
    const preStopS: number = container.lifecycle?.preStop?.sleep?.seconds ?? 0;
    const shutdownMs = Number(
      literal(env, "TERN_SHUTDOWN_TIMEOUT_MS") ??
        OPTIONS.find((o) => o.env === "TERN_SHUTDOWN_TIMEOUT_MS")?.default?.("broker"),
    );
    const neededS = preStopS + Math.ceil(shutdownMs / 1000) + HARD_EXIT_GRACE_S + SHUTDOWN_SLACK_S;
    if (graceS < neededS) {
      return [
        finding(
          "termination-grace",
          workload,
          `terminationGracePeriodSeconds ${graceS} < preStop ${preStopS} s + shutdown timeout ${shutdownMs} ms + hard-exit ${HARD_EXIT_GRACE_S} s + ${SHUTDOWN_SLACK_S} s: the kubelet would SIGKILL mid shutdown`,
        ),
      ];
    }
    return [];
  });

export const checkConfigChecksum: Check = (objects) =>
  statefulSets(objects).flatMap((s) => {
    const expected = templateConfigChecksum(s.spec.template, objects);
    if (expected === undefined) return [];
    const actual = s.spec.template.metadata?.annotations?.[CHECKSUM_ANNOTATION];
    if (actual === expected) return [];
    return [
      finding(
        "config-checksum",
        s,
        `pod template annotation ${CHECKSUM_ANNOTATION} is ${actual ?? "missing"}, the config is ${expected}: run node dist/scripts/k8s/config-checksum.js --write`,
      ),
    ];
  });

export const checkSpread: Check = (objects) =>
  ternContainers(objects).flatMap(({ workload }) => {
    const pod: Partial<PodSpec> = workload.spec.template.spec ?? {};
    const labels = workload.spec.template.metadata?.labels;
    const anti = [
      ...(pod.affinity?.podAntiAffinity?.requiredDuringSchedulingIgnoredDuringExecution ?? []),
      ...(pod.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution ?? []).map(
        (t) => t.podAffinityTerm,
      ),
    ];
    const out: Finding[] = [];
    if (
      !anti.some(
        (t) =>
          t?.topologyKey === "kubernetes.io/hostname" && selectorMatches(t.labelSelector, labels),
      )
    ) {
      out.push(
        finding(
          "spread",
          workload,
          "no podAntiAffinity on kubernetes.io/hostname selecting its own pods",
        ),
      );
    }
    if (
      !(pod.topologySpreadConstraints ?? []).some((t) => selectorMatches(t.labelSelector, labels))
    ) {
      out.push(finding("spread", workload, "no topologySpreadConstraints selecting its own pods"));
    }
    return out;
  });

export const CHECKS: Readonly<Record<string, Check>> = {
  "statefulset-policy": checkStatefulSetPolicy,
  "selector-matches-template": checkSelectorMatchesTemplate,
  "service-name-headless": checkServiceNameHeadless,
  "service-selects-pods": checkServicesSelectPods,
  "bootstrap-service": checkBootstrapService,
  "probe-ports": checkProbePorts,
  "probes-present": checkProbesPresent,
  "pdb-selects-workload": (objects) => [
    ...checkPdbSelectsWorkload(objects),
    ...checkEveryStatefulSetHasPdb(objects),
  ],
  "config-env": checkConfigEnv,
  "listen-ports": checkListenPorts,
  "controllers-list": checkControllersList,
  "data-volume": checkDataVolume,
  "security-context": checkSecurityContext,
  "heap-vs-memory": checkHeapVsMemory,
  "termination-grace": checkTerminationGrace,
  "config-checksum": checkConfigChecksum,
  spread: checkSpread,
  tls: (objects) => checkTls(objects, ternContainers(objects)).map((f) => ({ check: "tls", ...f })),
};

export function lintManifests(objects: readonly K8sObject[]): Finding[] {
  return Object.values(CHECKS).flatMap((check) => check(objects));
}

// Lint of a TLS deployment (deploy/k8s): for each tern container that turns TLS on, the
// facts that would otherwise show only in a live cluster, as a failed start, a probe that never
// passes or a rotation that never arrives:
// - the three files are all given (tern exits 2 otherwise);
// - each lies in a read-only, whole-directory mount of a Secret volume (a subPath mount is never
//   updated by the kubelet, so a renewed certificate would never reach the process);
// - no probe is `grpc:` (the kubelet's gRPC probe has no TLS: it would fail forever);
// - when the objects include cert-manager Certificates: the Secret's Certificate names exactly
//   the container's role in a tern:role:<role> SAN URI, and its DNS names cover the pods'
//   advertised names.
import { ROLE_URI_PREFIX } from "../../libs/server/tls/principal.js";
import {
  isCertificate,
  objectRef,
  sameNamespace,
  type Container,
  type K8sObject,
  type VolumeMount,
  type Workload,
} from "./manifest.js";
import type { EnvVar } from "./pod-env.js";

export interface TlsFinding {
  readonly object: string;
  readonly message: string;
}

/** What the lint knows of a tern container (lint.ts's ternContainers). */
export interface TlsContainer {
  readonly workload: Workload;
  readonly container: Container;
  readonly role: string;
  readonly env: Map<string, EnvVar>;
}

export const TLS_FILE_SETTINGS = [
  { env: "TERN_TLS_CERT_FILE", flag: "--tls-cert-file" },
  { env: "TERN_TLS_KEY_FILE", flag: "--tls-key-file" },
  { env: "TERN_TLS_CA_FILE", flag: "--tls-ca-file" },
] as const;

const PROBES = ["startupProbe", "readinessProbe", "livenessProbe"] as const;

export function checkTls(
  objects: readonly K8sObject[],
  containers: readonly TlsContainer[],
): TlsFinding[] {
  const out: TlsFinding[] = [];
  const certificates = objects.filter(isCertificate);
  for (const { workload, container, role, env } of containers) {
    const files = TLS_FILE_SETTINGS.map((s) => ({ ...s, path: settingValue(container, env, s) }));
    const given = files.filter((f) => f.path !== undefined);
    if (given.length === 0) continue;
    const say = (message: string) =>
      out.push({ object: objectRef(workload), message: `container ${container.name}: ${message}` });
    for (const f of files)
      if (f.path === undefined)
        say(
          `${f.env} is not set while ${given.map((g) => g.env).join(", ")} is: tern needs all three TLS files`,
        );
    const secrets = new Set<string>();
    for (const f of given) {
      const mount = mountOf(container, f.path!);
      if (mount === undefined) {
        say(`${f.env} ${f.path} is on no volume mount`);
        continue;
      }
      const volume = (workload.spec.template.spec?.volumes ?? []).find(
        (v) => v.name === mount.name,
      );
      const secretName: string | undefined = volume?.secret?.secretName;
      if (secretName === undefined)
        say(`${f.env} ${f.path} is on volume ${mount.name}, which is not a Secret volume`);
      else secrets.add(secretName);
      if (mount.readOnly !== true)
        say(`${f.env} ${f.path}: mount ${mount.mountPath} is not readOnly`);
      if (mount.subPath !== undefined || mount.subPathExpr !== undefined)
        say(
          `${f.env} ${f.path}: mount ${mount.mountPath} uses subPath, which the kubelet never updates: rotation would not reach the process`,
        );
    }
    for (const kind of PROBES) {
      if (container[kind]?.grpc !== undefined)
        say(
          `${kind} is grpc: with TLS on, the kubelet's gRPC probe (plaintext only) can never pass; probe the metrics port's /healthz or /livez`,
        );
    }
    if (certificates.length === 0) continue;
    for (const secretName of secrets) {
      const certificate = certificates.find(
        (c) => c.spec?.secretName === secretName && sameNamespace(c, workload),
      );
      if (certificate === undefined) {
        say(`Secret ${secretName} is written by no Certificate of the manifests`);
        continue;
      }
      const roleUris = ((certificate.spec!.uris ?? []) as string[]).filter((u) =>
        u.startsWith(ROLE_URI_PREFIX),
      );
      if (roleUris.length !== 1 || roleUris[0] !== `${ROLE_URI_PREFIX}${role}`) {
        say(
          `Secret ${secretName} comes from ${objectRef(certificate)}, whose role URIs are [${roleUris.join(", ")}], not exactly ${ROLE_URI_PREFIX}${role}`,
        );
      }
      const advertised = advertisedHost(workload);
      if (
        advertised !== undefined &&
        !coversName((certificate.spec!.dnsNames ?? []) as string[], advertised)
      ) {
        say(
          `${objectRef(certificate)} has no DNS name for the pods' advertised name ${advertised}`,
        );
      }
    }
  }
  return out;
}

function settingValue(
  container: Container,
  env: Map<string, EnvVar>,
  setting: { env: string; flag: string },
): string | undefined {
  const args: string[] = [...(container.command ?? []), ...(container.args ?? [])].map(String);
  for (let i = 0; i < args.length; i++) {
    if (args[i] === setting.flag) return args[i + 1];
    if (args[i]!.startsWith(`${setting.flag}=`)) return args[i]!.slice(setting.flag.length + 1);
  }
  const source = env.get(setting.env)?.source;
  if (source?.kind === "value") return source.value;
  if (source?.kind === "configMap") return source.value;
  return undefined;
}

function mountOf(container: Container, file: string): VolumeMount | undefined {
  const mounts: VolumeMount[] = [...(container.volumeMounts ?? [])].sort(
    (a, b) => b.mountPath.length - a.mountPath.length,
  );
  return mounts.find(
    (m) => file === m.mountPath || file.startsWith(`${m.mountPath.replace(/\/$/, "")}/`),
  );
}

/** A pod's stable DNS name with the ordinal as a placeholder label: pod-0.<service>.<ns>.svc.cluster.local. */
function advertisedHost(workload: Workload): string | undefined {
  if (workload.kind !== "StatefulSet" || workload.spec.serviceName === undefined) return undefined;
  return `${workload.metadata.name}-0.${workload.spec.serviceName}.${workload.metadata.namespace ?? "default"}.svc.cluster.local`;
}

/** Whether a certificate's DNS names cover a host, as TLS clients match them (a wildcard covers one left-most label). */
export function coversName(dnsNames: readonly string[], host: string): boolean {
  const lower = host.toLowerCase();
  return dnsNames.some((raw) => {
    const name = raw.toLowerCase();
    if (!name.startsWith("*.")) return name === lower;
    const dot = lower.indexOf(".");
    return dot > 0 && lower.slice(dot + 1) === name.slice(2);
  });
}

// The cluster a chaos run drives: 3 controllers, 3 brokers, 3 coordinators as real processes,
// each on its own loopback address (127.0.0.<10+i>) and in its own cgroup so that iptables can
// cut any pair of nodes. A 4th broker (the spare, 127.0.0.19) is planned but not started: a
// membership change adds it. Each node's wall clock reads the offset in its own file
// (clock/<node>.offset, libs/runtime/clock-offset.ts): clock-skew faults rewrite it. Every failpoint (coordinator and broker) is listed in TERN_FAILPOINTS but disarmed
// by a file in the once-directory; arming one deletes its file (libs/common/failpoints.ts).
import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CLOCK_OFFSET_FILE_ENV } from "../../../libs/runtime/clock-offset.js";
import { parsePeers, type Role } from "../../../libs/common/config.js";
import { silentLogger } from "../../../libs/common/logger.js";
import { ControllerClient } from "../../../libs/metadata/controller-client.js";
import { planCluster, type ProcessSpec } from "../../../scripts/cluster/layout.js";
import { clusterPortSpan } from "../../../scripts/cluster/free-base-port.js";
import { portInUse, randomListenBase } from "../../../scripts/cluster/port-check.js";
import { ProcessCluster } from "../../../scripts/cluster/process-cluster.js";
import { NodeCgroups } from "../faults/cgroups.js";
import { BROKER_DISK_RESERVE_BYTES, BrokerDisks } from "../faults/disk-full.js";
import { useClientTlsFiles, processCredentials } from "../../../libs/server/tls/credentials.js";
import {
  ensureClusterCa,
  ensureProcessCertificate,
  hostOf,
  type ClusterTlsFiles,
} from "../../../scripts/cluster/tls-material.js";

/** Failpoints placed in the services; value = the hit that fires (k-th marker ack). */
export const FAILPOINTS: Readonly<Record<string, number>> = {
  "coordinator.after-prepare-before-markers": 1,
  "coordinator.after-k-markers": 2,
  "coordinator.before-end-txn-response": 1,
  "broker.after-txn-append-before-response": 1,
  "broker.after-marker-append": 1,
  "group.after-txn-offset-commit": 1,
  // Holds rather than kills (Failpoints.hold): a broker's proposal of a transactional Kafka batch,
  // the 40th it handles once armed, so that the copiers are past their first, full polls.
  "broker.hold-txn-batch-after-verify-decision": 40,
};

/** The role whose process a failpoint kills (group.* runs in the broker's group coordinator). */
export function failpointRole(name: string): "coordinator" | "broker" {
  return name.startsWith("coordinator.") ? "coordinator" : "broker";
}
/** Planned nodes: the brokers include the spare, started only by a membership change. */
export const SHAPE = { controllers: 3, brokers: 4, coordinators: 3 } as const;
/** The broker a membership change adds (never started with the cluster). */
export const SPARE_BROKER: NodeRef = { role: "broker", id: 3 };
const HOST_OCTET_FIRST = 10;
/** The spare's address comes after the nine others', so theirs stay 127.0.0.10-18. */
const SPARE_HOST_OCTET = HOST_OCTET_FIRST + 9;
const PORT_ATTEMPTS_MAX = 30;
const HEALTH_TIMEOUT_MS = 180_000;
export const GROUP_SESSION_TIMEOUT_MS = 6_000;
const GROUP_HEARTBEAT_INTERVAL_MS = 500;
export const REPLACE_DEAD_AFTER_MS = 3_000;
const CLEANER_BACKOFF_MS = 500;

export interface NodeRef {
  readonly role: Role;
  readonly id: number;
}

export class ChaosCluster {
  readonly controller: ControllerClient;

  constructor(
    readonly processes: ProcessCluster,
    readonly dataDir: string,
    readonly onceDir: string,
    readonly cgroups: NodeCgroups,
    /** Each broker's data directory on a tmpfs of its own, for disk-full faults (none without root). */
    readonly disks: BrokerDisks,
  ) {
    this.controller = new ControllerClient({
      channelCredentials: processCredentials(),
      controllers: parsePeers(processes.controllers, "controllers"),
      logger: silentLogger(),
      requestTimeoutMs: 5_000,
    });
    processes.envOf = (spec) => ({
      [CLOCK_OFFSET_FILE_ENV]: this.clockOffsetFile({ role: spec.role, id: spec.id }),
    });
  }

  /** The nodes of the cluster: every node started at least once (the spare once it was added). */
  get specs(): readonly ProcessSpec[] {
    const started = this.processes.processes();
    return this.processes.specs.filter((s) =>
      started.some((p) => p.role === s.role && p.id === s.id),
    );
  }

  /** The file whose offset (ms) the node adds to its wall clock; "<file>.applied" acknowledges it. */
  clockOffsetFile(node: NodeRef): string {
    return join(this.dataDir, "clock", `${nodeName(node)}.offset`);
  }

  spec(node: NodeRef): ProcessSpec {
    return this.processes.spec(node.role, node.id);
  }

  addresses(role: Role): string[] {
    return this.processes.addresses(role);
  }

  /** Starts (again) one process from its data dir and puts it into its cgroup at once. */
  start(node: NodeRef): number {
    const pid = this.processes.start(node.role, node.id);
    this.cgroups.place(nodeName(node), pid);
    return pid;
  }

  alive(node: NodeRef): boolean {
    return this.processes
      .processes()
      .some((p) => p.role === node.role && p.id === node.id && p.alive);
  }

  dead(): NodeRef[] {
    return this.processes
      .processes()
      .filter((p) => !p.alive)
      .map((p) => ({ role: p.role, id: p.id }));
  }

  async stop(): Promise<void> {
    this.controller.close();
    try {
      await this.processes.stop({ termTimeoutMs: 5_000 });
    } finally {
      this.cgroups.removeAll();
      this.disks.unmountAll();
    }
  }
}

function isSpare(node: NodeRef): boolean {
  return node.role === SPARE_BROKER.role && node.id === SPARE_BROKER.id;
}

export function nodeName(node: NodeRef): string {
  return `${node.role}-${node.id}`;
}

/** Plans specs on a free base port, each node on 127.0.0.<10+i>. */
async function planSpecs(dataDir: string, basePort?: number): Promise<ProcessSpec[]> {
  for (let attempt = 0; attempt < PORT_ATTEMPTS_MAX; attempt++) {
    const base = basePort ?? randomListenBase(clusterPortSpan(SHAPE));
    const planned = planCluster({ dataDir, basePort: base, shape: SHAPE });
    const members = planned.filter((s) => !isSpare(s));
    const specs = planned.map((s) => {
      const octet = isSpare(s) ? SPARE_HOST_OCTET : HOST_OCTET_FIRST + members.indexOf(s);
      const host = `127.0.0.${octet}`;
      return { ...s, address: `${host}:${s.port}`, metricsAddress: `${host}:${s.metricsPort}` };
    });
    let free = true;
    for (const s of specs)
      if (
        (await portInUse(s.address.split(":")[0]!, s.port)) ||
        (await portInUse("127.0.0.1", s.port))
      )
        free = false;
    if (free || basePort !== undefined) return specs;
  }
  throw new Error(`no free base port in ${PORT_ATTEMPTS_MAX} attempts`);
}

export async function startChaosCluster(
  options: {
    dataDir?: string;
    basePort?: number;
    logLevel?: string;
    healthTimeoutMs?: number;
    tls?: boolean;
  } = {},
): Promise<ChaosCluster> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "tern-chaos-"));
  const onceDir = join(dataDir, "failpoints");
  mkdirSync(onceDir, { recursive: true });
  mkdirSync(join(dataDir, "clock"), { recursive: true });
  for (const name of Object.keys(FAILPOINTS)) writeFileSync(join(onceDir, name), "disarmed");
  const specs = await planSpecs(dataDir, options.basePort);
  const env = {
    TERN_LOG_LEVEL: options.logLevel ?? "warn",
    TERN_FAILPOINTS: Object.entries(FAILPOINTS)
      .map(([n, k]) => (k === 1 ? n : `${n}=${k}`))
      .join(","),
    TERN_FAILPOINTS_ONCE_DIR: onceDir,
    // Consumer groups (the group copier): a killed member's partitions move after 6 s, not Kafka's 45 s.
    TERN_GROUP_SESSION_TIMEOUT_MS: String(GROUP_SESSION_TIMEOUT_MS),
    TERN_GROUP_HEARTBEAT_INTERVAL_MS: String(GROUP_HEARTBEAT_INTERVAL_MS),
    TERN_DISK_RESERVE_BYTES: String(BROKER_DISK_RESERVE_BYTES),
    // Every process records what its syncs made durable, for the lost-writes fault (lost-writes.ts).
    TERN_SYNC_MANIFEST: "1",
    // Membership changes: a removed broker's replicas move to a free live broker (the spare, once
    // added) this long after its lease ran out, not after 30 s. Without a free broker nothing moves.
    TERN_REPLACE_DEAD_AFTER_MS: String(REPLACE_DEAD_AFTER_MS),
    // Compacted topics (kill-brokers-compacted): the cleaners look every 0.5 s, not Kafka's 15 s,
    // so that a run of seconds is cleaned while it runs. Without a compacted topic it finds nothing.
    TERN_CLEANER_BACKOFF_MS: String(CLEANER_BACKOFF_MS),
  };
  // --tls: certificates as `cluster up --tls` makes them; this process and the workload
  // processes it spawns (they inherit TERN_TLS_*) connect with the client certificate.
  let tls: ClusterTlsFiles | undefined;
  if (options.tls) {
    tls = ensureClusterCa(dataDir);
    for (const s of specs) ensureProcessCertificate(tls, s.role, s.id, hostOf(s.address));
    Object.assign(process.env, {
      TERN_TLS_CA_FILE: tls.caFile,
      TERN_TLS_CERT_FILE: tls.client.certFile,
      TERN_TLS_KEY_FILE: tls.client.keyFile,
    });
    useClientTlsFiles({
      caFile: tls.caFile,
      certFile: tls.client.certFile,
      keyFile: tls.client.keyFile,
    });
  }
  const processes = new ProcessCluster(dataDir, specs[0]!.port, specs, env, [], tls);
  const disks = new BrokerDisks();
  disks.mountAll(specs.filter((s) => s.role === "broker").map((s) => s.dataDir));
  const cluster = new ChaosCluster(
    processes,
    dataDir,
    onceDir,
    new NodeCgroups(`tern-chaos-${process.pid}-${specs[0]!.port}`),
    disks,
  );
  try {
    for (const s of specs) if (!isSpare(s)) cluster.start({ role: s.role, id: s.id });
    await processes.waitForHealth({ timeoutMs: options.healthTimeoutMs ?? HEALTH_TIMEOUT_MS });
  } catch (e) {
    await cluster.stop().catch(() => undefined);
    throw e;
  }
  return cluster;
}

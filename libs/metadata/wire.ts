// Conversions between tern.v1 controller messages (proto-loader objects: camelCase fields,
// enums as names, int64 as decimal strings) and the plain types of libs/metadata.
import type { PeerAddress } from "../common/config.js";
import { isScramMechanism, type ScramCredential } from "../common/scram.js";
import {
  isOperation,
  isPatternType,
  isPermission,
  isResourceType,
  type AclBinding,
} from "../common/acl.js";
import type { ClientQuotaEntry } from "../common/client-quota.js";
import { quotaEntryFromWire, quotaEntryToWire } from "./quota-wire.js";
import type { ClusterMetadata, NodeInfo, PartitionInfo, Role, TopicInfo } from "./types.js";
import { isTopicId } from "./topic-id.js";
import type {
  AclBinding__Output as WireAcl,
  ClusterMetadata__Output as WireMetadata__Output,
  NodeInfo__Output as WireNode__Output,
  PartitionInfo__Output as WirePartition__Output,
  ScramCredential__Output as WireScramCredential,
  TopicInfo__Output as WireTopic__Output,
} from "../common/proto-types/index.js";

export type WireRole = "BROKER" | "COORDINATOR" | "NODE_ROLE_UNSPECIFIED";

export function roleToWire(role: Role): WireRole {
  return role === "broker" ? "BROKER" : "COORDINATOR";
}

/** Accepts enum names or numbers (clients in other languages may send either). */
export function roleFromWire(value: unknown): Role | undefined {
  if (value === "BROKER" || value === 1) return "broker";
  if (value === "COORDINATOR" || value === 2) return "coordinator";
  return undefined;
}

export function nodeToWire(n: NodeInfo): WireNode__Output {
  return {
    nodeId: n.nodeId,
    role: roleToWire(n.role),
    address: n.address,
    rack: n.rack ?? "",
    alive: n.alive,
    incarnation: n.incarnation,
    kafkaAddress: n.kafkaAddress ?? "",
  };
}

export function topicToWire(t: TopicInfo): WireTopic__Output {
  return {
    name: t.name,
    topicId: t.id ?? "",
    internal: t.internal,
    role: roleToWire(t.role),
    config: { ...t.config },
    partitions: t.partitions.map((p) => ({
      topic: p.topic,
      partition: p.partition,
      replicas: [...p.replicas],
      leader: p.leader,
      leaderTerm: p.leaderTerm,
    })),
  };
}

export function metadataToWire(m: ClusterMetadata): WireMetadata__Output {
  return {
    version: m.version,
    controllerLeader: m.controllerLeader,
    nodes: m.nodes.map(nodeToWire),
    topics: m.topics.map(topicToWire),
    controllers: (m.controllers ?? []).map((c) => ({
      nodeId: c.id,
      address: `${c.host}:${c.port}`,
    })),
    scramCredentials: (m.scramCredentials ?? []).map((c) => ({
      user: c.user,
      mechanism: c.mechanism,
      salt: c.salt,
      iterations: c.iterations,
      storedKey: c.storedKey,
      serverKey: c.serverKey,
    })),
    acls: (m.acls ?? []).map((b) => ({ ...b })),
    clientQuotas: (m.clientQuotas ?? []).map(
      quotaEntryToWire,
    ) as WireMetadata__Output["clientQuotas"],
  };
}

/** A binding from the wire; undefined when a field is not one tern knows. */
export function aclFromWire(w: Partial<WireAcl> | null | undefined): AclBinding | undefined {
  const b = {
    principal: String(w?.principal ?? ""),
    host: String(w?.host || "*"),
    resourceType: w?.resourceType,
    resourceName: String(w?.resourceName ?? ""),
    patternType: w?.patternType,
    operation: w?.operation,
    permission: w?.permission,
  };
  return isResourceType(b.resourceType) &&
    isPatternType(b.patternType) &&
    isOperation(b.operation) &&
    isPermission(b.permission)
    ? (b as AclBinding)
    : undefined;
}

function credentialFromWire(
  w: Partial<WireScramCredential> | null | undefined,
): ScramCredential | undefined {
  if (!isScramMechanism(w?.mechanism)) return undefined;
  return {
    user: String(w.user ?? ""),
    mechanism: w.mechanism,
    salt: Buffer.from(w.salt ?? []),
    iterations: num(w.iterations),
    storedKey: Buffer.from(w.storedKey ?? []),
    serverKey: Buffer.from(w.serverKey ?? []),
  };
}

const num = (v: unknown, fallback = 0): number =>
  v === undefined || v === null || v === "" ? fallback : Number(v);

export function nodeFromWire(w: Partial<WireNode__Output>): NodeInfo {
  const n: NodeInfo = {
    nodeId: num(w.nodeId),
    role: roleFromWire(w.role) ?? "broker",
    address: String(w.address ?? ""),
    alive: Boolean(w.alive),
    incarnation: String(w.incarnation ?? ""),
  };
  if (typeof w.rack === "string" && w.rack.length > 0) n.rack = w.rack;
  if (typeof w.kafkaAddress === "string" && w.kafkaAddress.length > 0)
    n.kafkaAddress = w.kafkaAddress;
  return n;
}

export function partitionFromWire(w: Partial<WirePartition__Output>, topic: string): PartitionInfo {
  return {
    topic: String(w.topic || topic),
    partition: num(w.partition),
    replicas: (w.replicas ?? []).map((r: unknown) => num(r)),
    leader: num(w.leader, -1),
    leaderTerm: num(w.leaderTerm),
  };
}

export function topicFromWire(w: Partial<WireTopic__Output>): TopicInfo {
  const name = String(w.name ?? "");
  const topic: TopicInfo = {
    name,
    internal: Boolean(w.internal),
    role: roleFromWire(w.role) ?? "broker",
    partitions: (w.partitions ?? []).map((p) => partitionFromWire(p, name)),
    config: { ...(w.config ?? {}) },
  };
  if (isTopicId(w.topicId)) topic.id = w.topicId;
  return topic;
}

/**
 * Decoded metadata (every field present); also accepts the partial objects tests and other
 * clients build, so each field is read defensively.
 */
export function metadataFromWire(w: Partial<WireMetadata__Output>): ClusterMetadata {
  const controllers: PeerAddress[] = (w.controllers ?? []).map((c) => {
    const address = String(c.address ?? "");
    const colon = address.lastIndexOf(":");
    return {
      id: num(c.nodeId),
      host: address.slice(0, colon).replace(/^\[|\]$/g, ""),
      port: Number(address.slice(colon + 1)),
    };
  });
  const m: ClusterMetadata = {
    version: String(w.version ?? "0"),
    controllerLeader: num(w.controllerLeader, -1),
    nodes: (w.nodes ?? []).map(nodeFromWire),
    topics: (w.topics ?? []).map(topicFromWire),
  };
  if (controllers.length > 0) m.controllers = controllers;
  const credentials = (w.scramCredentials ?? [])
    .map(credentialFromWire)
    .filter((c): c is ScramCredential => c !== undefined);
  if (credentials.length > 0) m.scramCredentials = credentials;
  const acls = (w.acls ?? []).map(aclFromWire).filter((b): b is AclBinding => b !== undefined);
  if (acls.length > 0) m.acls = acls;
  const quotas = (w.clientQuotas ?? [])
    .map(quotaEntryFromWire)
    .filter((q): q is ClientQuotaEntry => q !== undefined);
  if (quotas.length > 0) m.clientQuotas = quotas;
  return m;
}

// The commands of the __controller Raft group and their wire form: one format byte, then
// compact JSON. JSON keeps entries readable in a debugger and is plenty fast for metadata;
// the format byte lets a later binary encoding coexist with entries already in the log.
// Everything time-dependent (nowMs, leaseMs) is stamped by the leader into the command, so
// apply() on every replica sees the same values and never reads a clock.
import type { ConfigAlteration, PartitionIncrease } from "./topic-alterations.js";
import type { Role } from "../../libs/metadata/types.js";
import type { AclBinding, AclFilter } from "../../libs/common/acl.js";
import type { QuotaAlteration } from "../../libs/common/client-quota.js";
import { DecodeError } from "../../libs/common/decode-error.js";

const FORMAT_JSON_V1 = 1;
/** Bound on one encoded command: the proposer fails fast instead of the Raft core dropping it. */
export const COMMAND_BYTES_MAX = 1024 * 1024;

export interface InternalTopicSpec {
  readonly name: string;
  readonly role: Role;
  readonly partitions: number;
  readonly replicationFactor: number;
}

export interface TopicRequest {
  readonly name: string;
  readonly partitions: number;
  readonly replicationFactor: number;
  readonly config: Record<string, string>;
  /**
   * The topic's id (libs/metadata/topic-id.ts), drawn by the proposing leader; absent in entries
   * written before topics had ids (the topic then gets one from a later tick's `topicIds`).
   */
  readonly id?: string;
}

/** An id the leader drew for a topic that has none yet (an internal topic the tick creates, or one created before ids). */
export interface TopicIdAssignment {
  readonly name: string;
  readonly id: string;
}

export interface LeaderReport {
  readonly topic: string;
  readonly partition: number;
  readonly leader: number;
  readonly term: number;
}

/** A credential as the log holds it: binary fields in base64 (entries are JSON). */
export interface ScramCredentialEntry {
  readonly user: string;
  readonly mechanism: string;
  readonly iterations: number;
  readonly salt: string;
  readonly storedKey: string;
  readonly serverKey: string;
}

export type Command =
  | {
      readonly type: "register";
      readonly nodeId: number;
      readonly role: Role;
      readonly address: string;
      readonly rack?: string;
      readonly kafkaAddress?: string;
      readonly incarnation: string;
      readonly nowMs: number;
      readonly leaseMs: number;
    }
  | {
      readonly type: "heartbeat";
      readonly nodeId: number;
      readonly role: Role;
      readonly incarnation: string;
      readonly nowMs: number;
      readonly leaseMs: number;
    }
  | {
      /** Time-driven work: lease expiry, bootstrap of internal topics, re-placement of dead nodes' replicas. */
      readonly type: "tick";
      readonly nowMs: number;
      readonly expireLeases: boolean;
      readonly replaceAfterMs: number;
      readonly internalTopics: readonly InternalTopicSpec[];
      /** Ids for the topics without one (absent in entries written before topics had ids). */
      readonly topicIds?: readonly TopicIdAssignment[];
    }
  /**
   * `configRules`: the version of the topic-config rules the proposing leader checked with
   * (topic-rules.ts); absent in entries written before version 2. Apply checks each entry with
   * the rules it was proposed under, so a replayed log decides as it did the first time.
   */
  | {
      readonly type: "createTopics";
      readonly topics: readonly TopicRequest[];
      readonly validateOnly: boolean;
      readonly configRules?: number;
    }
  | { readonly type: "deleteTopics"; readonly names: readonly string[] }
  /** Incremental config changes (topic-alterations.ts), checked with the rules version it carries. */
  | {
      readonly type: "alterConfigs";
      readonly topics: readonly ConfigAlteration[];
      readonly validateOnly: boolean;
      readonly configRules: number;
    }
  | {
      readonly type: "createPartitions";
      readonly topics: readonly PartitionIncrease[];
      readonly validateOnly: boolean;
    }
  | { readonly type: "allocateProducerIds"; readonly nodeId: number }
  | {
      readonly type: "reportLeaders";
      readonly nodeId: number;
      readonly changes: readonly LeaderReport[];
    }
  | {
      readonly type: "markDead";
      readonly nodeId: number;
      readonly role: Role;
      readonly nowMs: number;
    }
  /** Records a controller's address (before it is added as a voter) so every controller can reach it. */
  | { readonly type: "setController"; readonly nodeId: number; readonly address: string }
  /** Records that a controller left the quorum (after its removal as a voter). */
  | { readonly type: "removeController"; readonly nodeId: number }
  /** Records the data-directory id a controller runs with (refused when another one is recorded). */
  | {
      readonly type: "setControllerDirectory";
      readonly nodeId: number;
      readonly directoryId: string;
    }
  /** SCRAM users (docs/security.md): the leader derived the keys; no password reaches the log. */
  | {
      readonly type: "alterScram";
      readonly upsertions: readonly ScramCredentialEntry[];
      readonly deletions: ReadonlyArray<{ readonly user: string; readonly mechanism: string }>;
    }
  /** ACLs (docs/security.md): Kafka's CreateAcls and DeleteAcls (filters) as one entry each. */
  | { readonly type: "createAcls"; readonly creations: readonly AclBinding[] }
  | { readonly type: "deleteAcls"; readonly filters: readonly AclFilter[] }
  /** Client quotas (docs/security.md, "Quotas"): one AlterClientQuotas request. */
  | { readonly type: "alterClientQuotas"; readonly entries: readonly QuotaAlteration[] };

export type CommandType = Command["type"];

const COMMAND_TYPES: ReadonlySet<string> = new Set<CommandType>([
  "register",
  "heartbeat",
  "tick",
  "createTopics",
  "deleteTopics",
  "allocateProducerIds",
  "reportLeaders",
  "markDead",
  "setController",
  "removeController",
  "setControllerDirectory",
  "alterConfigs",
  "createPartitions",
  "alterScram",
  "createAcls",
  "deleteAcls",
  "alterClientQuotas",
]);

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

export function encodeCommand(command: Command): Uint8Array {
  const json = encoder.encode(JSON.stringify(command));
  const out = new Uint8Array(json.length + 1);
  out[0] = FORMAT_JSON_V1;
  out.set(json, 1);
  return out;
}

/** Decodes an entry; throws DecodeError for anything that is not a known command. */
export function decodeCommand(data: Uint8Array): Command {
  if (data.length < 2)
    throw new DecodeError("command", `entry of ${data.length} bytes is too short`);
  if (data[0] !== FORMAT_JSON_V1)
    throw new DecodeError("command", `unknown command format ${data[0]}`);
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(data.subarray(1)));
  } catch (e) {
    throw new DecodeError("command", `malformed command: ${(e as Error).message}`);
  }
  if (
    typeof value !== "object" ||
    value === null ||
    !COMMAND_TYPES.has((value as { type?: unknown }).type as string)
  ) {
    throw new DecodeError("command", "command without a known type");
  }
  return value as Command;
}

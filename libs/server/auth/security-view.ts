// What the gRPC authorizer reads from the cluster metadata: ACLs, SCRAM credentials and topic
// names. Each role supplies it from what it already has (the controller from its state
// machine, brokers and coordinators from the WatchMetadata view that the Kafka listeners use
// too), so an ACL or user change reaches the gRPC API with the same view that carries it to
// the Kafka listeners (well under a second).
import type { AclBinding } from "../../common/acl.js";
import type { ScramCredential } from "../../common/scram.js";

export interface SecurityView {
  /** False until the process has its first metadata view: callers are then asked to retry. */
  loaded(): boolean;
  acls(): readonly AclBinding[];
  scramCredentials(): readonly ScramCredential[];
  /** Existing data topics (Kafka's "WRITE on some topic" rule for idempotent producers). */
  topicNames(): readonly string[];
}

/** A view over one optional metadata snapshot (brokers and coordinators). */
export function metadataSecurityView(
  metadata: () =>
    | {
        acls?: AclBinding[] | undefined;
        scramCredentials?: ScramCredential[] | undefined;
        topics: ReadonlyArray<{ name: string; internal?: boolean }>;
      }
    | undefined,
): SecurityView {
  return {
    loaded: () => metadata() !== undefined,
    acls: () => metadata()?.acls ?? [],
    scramCredentials: () => metadata()?.scramCredentials ?? [],
    topicNames: () => (metadata()?.topics ?? []).filter((t) => !t.internal).map((t) => t.name),
  };
}

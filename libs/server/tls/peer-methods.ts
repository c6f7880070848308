// Which RPCs only tern processes may send, and from which roles. With TLS on, a call to one of
// these needs a cluster-CA certificate carrying an allowed role (principal.ts); everything else
// is open to any caller until ACLs land (issue 18 part 3), which will plug in beside this table.
import type { Role } from "../../common/config.js";

const ANY_PEER: readonly Role[] = ["controller", "broker", "coordinator"];

/** Full gRPC method path → the roles allowed to call it. */
export const PEER_METHODS: ReadonlyMap<string, readonly Role[]> = new Map<string, readonly Role[]>([
  // Raft: every role hosts Raft groups (metadata, partitions, transaction and offsets logs).
  ["/tern.v1.RaftTransport/Stream", ANY_PEER],
  ["/tern.v1.RaftTransport/InstallSnapshot", ANY_PEER],
  // Node lifecycle and leader reports; controllers forward these to their leader.
  ["/tern.v1.Controller/RegisterNode", ANY_PEER],
  ["/tern.v1.Controller/Heartbeat", ANY_PEER],
  ["/tern.v1.Controller/ReportLeaders", ANY_PEER],
  ["/tern.v1.Controller/AllocateProducerIds", ANY_PEER],
  ["/tern.v1.Controller/RecordControllerDirectory", ["controller"]],
  // Transaction markers come from the transaction coordinators only.
  ["/tern.v1.Broker/WriteTxnMarkers", ["coordinator"]],
  // A replica repairing a damaged segment reads the records from another broker's replica.
  ["/tern.v1.Broker/ReadReplicaRecords", ["broker"]],
]);

// The group coordinator's ports: what it needs from the process it runs in (the broker) and the
// hook it offers back, declared here and filled in by services/broker/compose.ts. The group
// component imports libs/ and its own files only; nothing of services/broker or services/kafka.
import type { ErrorName } from "../../libs/common/errors.js";
import type { ClusterMetadata } from "../../libs/metadata/types.js";
import type { RaftGroup } from "../../libs/raft-host/api.js";

/**
 * The Raft groups of the __consumer_offsets partitions this process holds, by group id
 * (offsetsGroupId). The broker's replica manager opens and drops them on its raft host; the
 * coordinator only looks them up (the raft host fits as it is).
 */
export interface OffsetsPartitionHost {
  group(groupId: string): RaftGroup | undefined;
}

/** The process's latest cluster view; undefined until the first one arrives. */
export type ClusterMetadataView = () => ClusterMetadata | undefined;

/**
 * Asks the transaction coordinator whether a partition was added to the ongoing transaction
 * of (transactionalId, producerId, producerEpoch): AddPartitionsToTxn with verify_only (KIP-890).
 * NONE when it was; INVALID_TXN_STATE, PRODUCER_FENCED, ... otherwise. The broker's
 * GrpcTxnVerifier.verify fits with a one-line adapter.
 */
export type TxnPartitionVerifier = (query: {
  transactionalId: string;
  producerId: bigint;
  producerEpoch: number;
  topic: string;
  partition: number;
  /** "add": transactions V2, the partition joins the transaction (default "verify"). */
  mode?: "verify" | "add";
}) => Promise<{ error: ErrorName; message: string }>;

/**
 * A marker of producerId was applied to __consumer_offsets/<partition> (undefined: its state was
 * replaced by a snapshot): the transaction verifier forgets what it remembered for them.
 */
export type TransactionEndListener = (partition: number, producerId: bigint | undefined) => void;

/** Log end offsets (high watermarks) from the broker at address, for the lag metrics. */
export type EndOffsetsLister = (
  address: string,
  partitions: Array<{ topic: string; partition: number }>,
  timeoutMs: number,
) => Promise<Array<{ topic: string; partition: number; offset: bigint | null }>>;

/**
 * A transaction marker for a __consumer_offsets partition as the broker's WriteTxnMarkers path
 * carries it (structurally the broker's MarkerRequest).
 */
export interface OffsetsMarkerRequest {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly coordinatorEpoch: number;
  readonly controlType: "COMMIT" | "ABORT";
  readonly transactionalId: string;
  readonly epochBumped: boolean;
}

/**
 * The hook the coordinator offers the broker: applies a marker to __consumer_offsets/<partition>
 * through its Raft log (the broker's OffsetsMarkerWriter, structurally). error NONE on success.
 */
export type OffsetsMarkerWriter = (
  partition: number,
  marker: OffsetsMarkerRequest,
) => Promise<{ error: ErrorName; message: string }>;

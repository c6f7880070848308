// WriteTxnMarkers: each (marker, partition) becomes one Raft entry of that partition. Markers
// for __consumer_offsets partitions go to the group coordinator's state machine instead.
// Fencing (older producer epoch, older coordinator epoch) is decided at apply.
import type { Clock } from "../../libs/runtime/clock.js";
import { TernError, type ErrorName } from "../../libs/common/errors.js";
import { failpoint } from "../../libs/common/failpoints.js";
import type { Logger } from "../../libs/common/logger.js";
import { CONSUMER_OFFSETS_TOPIC } from "../../libs/metadata/types.js";
import { BROKER_LIMITS } from "./broker-limits.js";
import type { PartitionDirectory } from "./local-partition.js";
import { encodeEntry, type ControlKind } from "./partition-entry.js";
import type { AppendResult } from "./partition-state-machine.js";
import { proposeFailure } from "./produce-handler.js";
import type { BrokerMetrics } from "./broker-metrics.js";
import { CONTROL_TYPE_NAMES, enumName, errorFields, int32, int64 } from "./wire.js";
import type {
  TxnMarker__Output,
  WriteTxnMarkersRequest__Output,
  WriteTxnMarkersResponse__Output,
} from "../../libs/common/proto-types/index.js";

export interface MarkerRequest {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly coordinatorEpoch: number;
  readonly controlType: ControlKind;
  readonly transactionalId: string;
  /** partition-entry.ts MarkerEntry.epochBumped. */
  readonly epochBumped: boolean;
}

export interface MarkerOutcome {
  readonly error: ErrorName;
  readonly message: string;
}

/** Writes a marker to a __consumer_offsets partition (the group coordinator implements it). */
export type OffsetsMarkerWriter = (
  partition: number,
  marker: MarkerRequest,
) => Promise<MarkerOutcome>;

export interface MarkerDeps {
  readonly metrics?: BrokerMetrics;
  readonly directory: PartitionDirectory;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly offsetsMarkerWriter: OffsetsMarkerWriter | undefined;
}

/** Appends one marker to one local partition (also used by the admin abort). */
export async function writePartitionMarker(
  deps: MarkerDeps,
  topic: string,
  partition: number,
  marker: MarkerRequest,
): Promise<MarkerOutcome & { leader?: { nodeId: number; address: string } }> {
  if (topic === CONSUMER_OFFSETS_TOPIC) {
    if (deps.offsetsMarkerWriter === undefined)
      return {
        error: "UNKNOWN_SERVER_ERROR",
        message: "this broker cannot write consumer-offsets markers yet",
      };
    return deps.offsetsMarkerWriter(partition, marker);
  }
  if (deps.directory.lookup(topic, partition) === "unknown")
    return {
      error: "UNKNOWN_TOPIC_OR_PARTITION",
      message: `unknown topic-partition ${topic}/${partition}`,
    };
  const local = deps.directory.local(topic, partition);
  if (local === undefined)
    return {
      error: "NOT_LEADER_OR_FOLLOWER",
      message: `no replica of ${topic}/${partition} here`,
      leader: deps.directory.endpoint(deps.directory.metadataLeader(topic, partition)),
    };
  if (!local.group.isLeader())
    return {
      error: "NOT_LEADER_OR_FOLLOWER",
      message: `not the leader of ${topic}/${partition}`,
      leader: deps.directory.endpoint(local.group.leader()),
    };
  const data = encodeEntry({
    kind: "marker",
    header: local.entryHeader(deps.clock.nowMs()),
    producerId: marker.producerId,
    producerEpoch: marker.producerEpoch,
    controlType: marker.controlType,
    coordinatorEpoch: marker.coordinatorEpoch,
    epochBumped: marker.epochBumped,
  });
  try {
    const { result } = await local.group.propose<AppendResult>(data, {
      timeoutMs: BROKER_LIMITS.markerTimeoutMs,
    });
    return { error: result.error, message: result.message };
  } catch (e) {
    const failed = proposeFailure(deps, local, e);
    return {
      error: failed.error,
      message: failed.message,
      ...(failed.leader ? { leader: failed.leader } : {}),
    };
  }
}

export function parseMarker(m: TxnMarker__Output): MarkerRequest {
  const control = enumName(m?.controlType, CONTROL_TYPE_NAMES);
  if (control !== "COMMIT" && control !== "ABORT")
    throw new TernError(
      "INVALID_REQUEST",
      `control_type must be COMMIT or ABORT, got ${String(m?.controlType)}`,
    );
  const producerId = int64(m?.producerId, "producer_id");
  if (producerId < 0n)
    throw new TernError("INVALID_REQUEST", `producer_id ${producerId} is negative`);
  return {
    producerId,
    producerEpoch: int32(m?.producerEpoch),
    coordinatorEpoch: int32(m?.coordinatorEpoch),
    controlType: control,
    transactionalId: String(m?.transactionalId ?? ""),
    epochBumped: m?.epochBumped === true,
  };
}

export function createWriteTxnMarkersHandler(
  deps: MarkerDeps,
): (request: WriteTxnMarkersRequest__Output) => Promise<WriteTxnMarkersResponse__Output> {
  return async (request) => {
    const markers = Array.isArray(request?.markers) ? request.markers : [];
    const itemCount = markers.reduce(
      (n, m) => n + (Array.isArray(m?.partitions) ? m.partitions.length : 0),
      0,
    );
    if (itemCount > BROKER_LIMITS.markerItemsPerRequestMax)
      throw new TernError(
        "INVALID_REQUEST",
        `${itemCount} marker partitions in one request (max ${BROKER_LIMITS.markerItemsPerRequestMax})`,
      );
    const parsed = markers.map(parseMarker);
    const results = await Promise.all(
      markers.map(async (m, i) => {
        const marker = parsed[i]!;
        const partitions = await Promise.all(
          (m.partitions ?? []).map(async (tp) => {
            const topic = String(tp?.topic ?? "");
            const partition = int32(tp?.partition, -1);
            const outcome = await writePartitionMarker(deps, topic, partition, marker);
            if (outcome.error === "NONE") failpoint("broker.after-marker-append");
            deps.metrics?.markersWritten.inc({ type: marker.controlType, code: outcome.error });
            if (outcome.error !== "NONE")
              deps.logger.info(
                {
                  topic,
                  partition,
                  producerId: marker.producerId.toString(),
                  error: outcome.error,
                },
                "marker refused",
              );
            return {
              topicPartition: { topic, partition },
              ...errorFields(outcome.error, outcome.message),
            };
          }),
        );
        return { producerId: marker.producerId.toString(), partitions };
      }),
    );
    return { results };
  };
}

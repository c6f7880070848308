// Transaction markers, in the partition service (WriteTxnMarkers, and the admin abort of a
// hanging transaction): each (marker, partition) becomes one Raft entry of that partition.
// Markers for __consumer_offsets partitions go to the group coordinator's state machine
// instead. Fencing (older producer epoch, older coordinator epoch) is decided at apply.
import type { Clock } from "../../../libs/runtime/clock.js";
import { TernError, type ErrorName } from "../../../libs/common/errors.js";
import type { Failpoints } from "../../../libs/common/failpoints.js";
import type { Logger } from "../../../libs/common/logger.js";
import { CONSUMER_OFFSETS_TOPIC } from "../../../libs/metadata/types.js";
import { BROKER_LIMITS } from "../broker-limits.js";
import type { PartitionDirectory } from "../local-partition.js";
import { encodeEntry, type ControlKind } from "../partition-entry.js";
import type { AppendResult } from "../partition-state-machine.js";
import type { BrokerMetrics } from "../broker-metrics.js";
import { proposeFailure, type Endpoint } from "./outcome.js";

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
  readonly metrics?: BrokerMetrics | undefined;
  readonly directory: PartitionDirectory;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly offsetsMarkerWriter?: OffsetsMarkerWriter | undefined;
  /** The process's failpoints (ctx.runtime.failpoints); none armed when absent. */
  readonly failpoints?: Failpoints | undefined;
}

/** One marker and the partitions it goes to. */
export interface MarkerWrite {
  readonly marker: MarkerRequest;
  readonly partitions: ReadonlyArray<{ readonly topic: string; readonly partition: number }>;
}

/** Each write's partitions' outcomes, in order; throws INVALID_REQUEST for too many partitions in all. */
export async function writeMarkers(
  deps: MarkerDeps,
  writes: readonly MarkerWrite[],
): Promise<Array<Array<MarkerOutcome & { topic: string; partition: number }>>> {
  const itemCount = writes.reduce((n, w) => n + w.partitions.length, 0);
  if (itemCount > BROKER_LIMITS.markerItemsPerRequestMax)
    throw new TernError(
      "INVALID_REQUEST",
      `${itemCount} marker partitions in one request (max ${BROKER_LIMITS.markerItemsPerRequestMax})`,
    );
  return Promise.all(
    writes.map(({ marker, partitions }) =>
      Promise.all(
        partitions.map(async ({ topic, partition }) => {
          const outcome = await writeMarker(deps, topic, partition, marker);
          if (outcome.error === "NONE") deps.failpoints?.crash("broker.after-marker-append");
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
          return { topic, partition, error: outcome.error, message: outcome.message };
        }),
      ),
    ),
  );
}

/** Appends one marker to one local partition (also the admin abort's). */
export async function writeMarker(
  deps: MarkerDeps,
  topic: string,
  partition: number,
  marker: MarkerRequest,
): Promise<MarkerOutcome & { leader?: Endpoint }> {
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

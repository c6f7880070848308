// The partition service: what a broker does with the partitions it leads, in domain terms, for
// both front doors (the gRPC Broker handlers and the Kafka listener's APIs are adapters over
// it): leader checks, idempotence and transaction verification, proposing and mapping the
// outcome (produce.ts), reads with isolation (read.ts), offsets by time (offsets.ts), log start
// moves (log-start.ts) and transaction markers (markers.ts). One per broker process, so both
// adapters share the per-(partition, producer) proposal order.
import type { Failpoints } from "../../../libs/common/failpoints.js";
import type { SchedulingClock } from "../../../libs/runtime/scheduler.js";
import type { Logger } from "../../../libs/common/logger.js";
import type { PartitionDirectory } from "../local-partition.js";
import type { TxnVerifier } from "../txn-verifier.js";
import type { BrokerMetrics } from "../broker-metrics.js";
import { PartitionProduce, type ProduceCommand, type ProduceOutcome } from "./produce.js";
import { readPartitions, type PartitionRead, type ReadQuery } from "./read.js";
import { listOffsets, type OffsetAnswer, type OffsetQuery } from "./offsets.js";
import { moveLogStarts, type LogStartCommand, type LogStartOutcome } from "./log-start.js";
import {
  writeMarker,
  writeMarkers,
  type MarkerOutcome,
  type MarkerRequest,
  type MarkerWrite,
  type OffsetsMarkerWriter,
} from "./markers.js";
import type { Endpoint } from "./outcome.js";

export interface PartitionServiceDeps {
  readonly metrics?: BrokerMetrics | undefined;
  readonly directory: PartitionDirectory;
  /** KIP-890 verification (or the add itself) of first transactional appends. */
  readonly verifier: TxnVerifier;
  /** Entry append times, and the long poll's deadline and timer (a ManualClock in tests). */
  readonly clock: SchedulingClock;
  readonly logger: Logger;
  /** Refuses produce while the data directory is below its free-space reserve. */
  readonly disk?: { refusal(): string | undefined } | undefined;
  /** Markers to __consumer_offsets partitions (the group coordinator); undefined: refused. */
  readonly offsetsMarkerWriter?: OffsetsMarkerWriter | undefined;
  /** The process's failpoints (ctx.runtime.failpoints); none armed when absent. */
  readonly failpoints?: Failpoints | undefined;
}

/**
 * The operations, bound once to their parts: adapters call produce.ts, read.ts, … directly,
 * and nothing here runs per request.
 */
export class PartitionService {
  /** Appends each partition's batch; one answer per partition, in order. */
  readonly produce: (command: ProduceCommand) => Promise<ProduceOutcome[]>;
  /** Reads each partition (long-polling for minBytes); one answer per partition, in order. */
  readonly fetch: (query: ReadQuery) => Promise<PartitionRead[]>;
  readonly listOffsets: (query: OffsetQuery) => Promise<OffsetAnswer[]>;
  /** Moves log starts up (DeleteRecords). */
  readonly deleteRecords: (command: LogStartCommand) => Promise<LogStartOutcome[]>;
  readonly writeMarkers: (
    writes: readonly MarkerWrite[],
  ) => Promise<Array<Array<MarkerOutcome & { topic: string; partition: number }>>>;
  /** One marker to one partition (the admin abort of a hanging transaction). */
  readonly writeMarker: (
    topic: string,
    partition: number,
    marker: MarkerRequest,
  ) => Promise<MarkerOutcome & { leader?: Endpoint }>;

  constructor(deps: PartitionServiceDeps) {
    const producing = new PartitionProduce(deps);
    this.produce = producing.produce.bind(producing);
    this.fetch = readPartitions.bind(undefined, deps);
    this.listOffsets = listOffsets.bind(undefined, deps);
    this.deleteRecords = moveLogStarts.bind(undefined, deps);
    this.writeMarkers = writeMarkers.bind(undefined, deps);
    this.writeMarker = writeMarker.bind(undefined, deps);
  }
}

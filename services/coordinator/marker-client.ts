// How the coordinator reaches the brokers for transaction markers: WriteTxnMarkers through the
// process's transport (libs/runtime/transport.ts), where a partition's leader is in this node's cluster view,
// and whether a partition is gone by the controller's linearizable answer. The marker channel
// (transaction-marker-channel-manager.ts) takes these three as its ports.
import type { ClusterView } from "../../libs/metadata/cluster-view.js";
import { findPartition, findTopic, partitionLeaderAddress } from "../../libs/metadata/lookup.js";
import type { ClusterMetadata } from "../../libs/metadata/types.js";
import type { ServiceTransport } from "../../libs/runtime/transport.js";
import type {
  LeaderLookup,
  MarkerTransport,
  PartitionGoneCheck,
} from "./transaction-marker-channel-manager.js";

export class MarkerClient {
  constructor(
    private readonly calls: ServiceTransport,
    private readonly view: ClusterView,
    /** The controller's linearizable metadata (a local view may predate a topic). */
    private readonly linearizableMetadata: () => Promise<ClusterMetadata>,
  ) {}

  readonly transport: MarkerTransport = (address, markers, timeoutMs) =>
    this.calls.unary("Broker", address, "WriteTxnMarkers", { markers }, { timeoutMs });

  readonly leaderOf: LeaderLookup = (tp) => {
    const metadata = this.view.current();
    if (metadata === undefined) return "no-leader";
    if (
      findTopic(metadata, tp.topic) === undefined ||
      findPartition(metadata, tp.topic, tp.partition) === undefined
    )
      return "no-topic";
    const address = partitionLeaderAddress(metadata, tp.topic, tp.partition);
    return address === undefined ? "no-leader" : { address };
  };

  /** Only the controller's linearizable answer says "gone". */
  readonly confirmGone: PartitionGoneCheck = async (tp) =>
    findPartition(await this.linearizableMetadata(), tp.topic, tp.partition) === undefined;
}

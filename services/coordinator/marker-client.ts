// How the coordinator reaches the brokers for transaction markers: WriteTxnMarkers over gRPC
// (one client per broker address), where a partition's leader is in this node's cluster view,
// and whether a partition is gone by the controller's linearizable answer. The marker channel
// (transaction-marker-channel-manager.ts) takes these three as its ports.
import type { TernGrpcPackage, BrokerClient } from "../../libs/common/proto-types/index.js";
import type { ClusterView } from "../../libs/metadata/cluster-view.js";
import { findPartition, findTopic, partitionLeaderAddress } from "../../libs/metadata/lookup.js";
import type { ClusterMetadata } from "../../libs/metadata/types.js";
import { GrpcClientCache } from "../../libs/grpc/grpc-client-cache.js";
import { processCredentials } from "../../libs/server/tls/credentials.js";
import { grpcDeadline } from "../../libs/grpc/grpc-deadline.js";
import type {
  LeaderLookup,
  MarkerTransport,
  PartitionGoneCheck,
} from "./transaction-marker-channel-manager.js";

/** Bound on cached broker clients (one per broker address). */
const BROKER_CLIENTS_MAX = 256;

export class MarkerClient {
  private readonly clients = new GrpcClientCache({
    credentials: processCredentials(),
    clientsMax: BROKER_CLIENTS_MAX,
  });

  constructor(
    private readonly proto: TernGrpcPackage,
    private readonly view: ClusterView,
    /** The controller's linearizable metadata (a local view may predate a topic). */
    private readonly linearizableMetadata: () => Promise<ClusterMetadata>,
  ) {}

  readonly transport: MarkerTransport = (address, markers, timeoutMs) => {
    const client = this.clients.get<BrokerClient>("Broker", this.proto.tern.v1.Broker, address);
    return new Promise((resolve, reject) => {
      client.WriteTxnMarkers({ markers }, { deadline: grpcDeadline(timeoutMs) }, (err, res) =>
        err ? reject(err) : resolve(res!),
      );
    });
  };

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

  close(): void {
    this.clients.close();
  }
}

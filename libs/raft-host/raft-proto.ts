// Loads proto/tern/v1/raft.proto alone (with the shared proto-loader options), so the Raft
// transport works whatever state the other .proto files are in.
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { PROTO_LOADER_OPTIONS, protoRoot } from "../common/proto.js";
import { decodeBatchFrame, encodeBatchFrame, type RaftBatchWire } from "./batch-frame.js";
import type { ProtoGrpcType as RaftPackage } from "../common/proto-types/raft.js";

export type { RaftBatchWire, RaftEnvelopeWire } from "./batch-frame.js";

export interface SnapshotChunkWire {
  groupId: string;
  fromNodeId: number;
  toNodeId: number;
  message: Uint8Array;
  /** int64 as a decimal string (longs: String) on receipt; a number is accepted when sending. */
  totalBytes: string | number;
  offset: string | number;
  data: Uint8Array;
  last: boolean;
}

export interface SnapshotAckWire {
  accepted: boolean;
  errorMessage: string;
}

/** The transport's client: Stream takes RaftBatchWire objects or frames already encoded (batch-frame.ts). */
export interface RaftTransportClient extends grpc.Client {
  Stream(
    callback: grpc.requestCallback<unknown>,
  ): grpc.ClientWritableStream<RaftBatchWire | Buffer>;
  InstallSnapshot(
    callback: grpc.requestCallback<SnapshotAckWire>,
  ): grpc.ClientWritableStream<SnapshotChunkWire>;
}

export interface RaftProto {
  readonly definition: grpc.ServiceDefinition;
  readonly Client: new (
    address: string,
    credentials: grpc.ChannelCredentials,
    options?: grpc.ClientOptions,
  ) => RaftTransportClient;
}

let cached: RaftProto | undefined;

export function loadRaftProto(): RaftProto {
  if (cached) return cached;
  const root = protoRoot();
  const packageDefinition = protoLoader.loadSync("tern/v1/raft.proto", {
    ...PROTO_LOADER_OPTIONS,
    includeDirs: [root],
  });
  // The generated ProtoGrpcType of raft.proto describes what loadPackageDefinition builds from it.
  const pkg = grpc.loadPackageDefinition(packageDefinition) as unknown as RaftPackage;
  const generated = pkg.tern.v1.RaftTransport;
  // Same paths and wire format as the .proto; only Stream's RaftBatch codec is ours (batch-frame.ts).
  const stream = generated.service.Stream!;
  const definition: grpc.ServiceDefinition = {
    ...generated.service,
    Stream: {
      ...stream,
      // The transport writes frames it already encoded (encodeMessageFrame); objects are encoded here.
      requestSerialize: (batch: RaftBatchWire | Buffer) =>
        Buffer.isBuffer(batch) ? batch : encodeBatchFrame(batch),
      requestDeserialize: (bytes: Buffer) => decodeBatchFrame(bytes),
    },
  };
  // makeGenericClientConstructor is untyped: the client has the definition's methods, with our Stream codec.
  const Client = grpc.makeGenericClientConstructor(
    definition,
    "RaftTransport",
  ) as unknown as RaftProto["Client"];
  cached = { definition, Client };
  return cached;
}

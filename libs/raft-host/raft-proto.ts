// Loads proto/tern/v1/raft.proto alone (with the shared proto-loader options), so the Raft
// transport works whatever state the other .proto files are in.
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { PROTO_LOADER_OPTIONS, protoRoot } from "../common/proto.js";
import { decodeBatchFrame, encodeBatchFrame } from "./batch-frame.js";

export interface RaftEnvelopeWire {
  groupId: string;
  message: Uint8Array;
}

export interface RaftBatchWire {
  fromNodeId: number;
  toNodeId: number;
  messages: RaftEnvelopeWire[];
  /** The sender process's incarnation (new on every start): node-level liveness (transport.ts). */
  incarnation?: number;
}

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

export interface RaftProto {
  readonly definition: grpc.ServiceDefinition;
  readonly Client: grpc.ServiceClientConstructor;
}

let cached: RaftProto | undefined;

export function loadRaftProto(): RaftProto {
  if (cached) return cached;
  const root = protoRoot();
  const packageDefinition = protoLoader.loadSync("tern/v1/raft.proto", { ...PROTO_LOADER_OPTIONS, includeDirs: [root] });
  const pkg = grpc.loadPackageDefinition(packageDefinition) as any;
  const generated = pkg.tern.v1.RaftTransport as grpc.ServiceClientConstructor;
  // Same paths and wire format as the .proto; only Stream's RaftBatch codec is ours (batch-frame.ts).
  const stream = generated.service.Stream!;
  const definition: grpc.ServiceDefinition = {
    ...generated.service,
    Stream: {
      ...stream,
      // The transport writes frames it already encoded (encodeMessageFrame); objects are encoded here.
      requestSerialize: (batch: RaftBatchWire | Buffer) => (Buffer.isBuffer(batch) ? batch : encodeBatchFrame(batch)),
      requestDeserialize: (bytes: Buffer) => decodeBatchFrame(bytes),
    },
  };
  const Client = grpc.makeGenericClientConstructor(definition, "RaftTransport");
  cached = { definition, Client };
  return cached;
}

// InstallSnapshot: a Snapshot-type Raft message travels as a stream of bounded chunks. The first
// chunk carries the message with empty snapshot data; the data follows in order. The receiver
// checks offsets and the total size, reassembles, and steps the whole message into the group.
import type * as grpc from "@grpc/grpc-js";
import { decodeMessage, encodeMessage } from "../raft/codec.js";
import { MessageType, type Message, type NodeId } from "../raft/types.js";
import type { RaftHostLimits } from "./limits.js";
import type { RaftTransportClient, SnapshotAckWire, SnapshotChunkWire } from "./raft-proto.js";

const EMPTY = new Uint8Array(0);

/** Streams one snapshot message to a peer; resolves with the receiver's verdict. */
export function sendSnapshot(
  client: RaftTransportClient,
  from: NodeId,
  groupId: string,
  message: Message,
  limits: RaftHostLimits,
): Promise<boolean> {
  const snapshot = message.snapshot;
  if (!snapshot) return Promise.resolve(false);
  const data = snapshot.data;
  const head = encodeMessage({
    ...message,
    snapshot: { metadata: snapshot.metadata, data: EMPTY },
  });
  return new Promise<boolean>((resolve, reject) => {
    const call = client.InstallSnapshot((err: grpc.ServiceError | null, ack?: SnapshotAckWire) => {
      if (err) reject(err);
      else resolve(ack!.accepted);
    });
    call.on("error", () => {});
    const chunkBytes = limits.snapshotChunkBytes;
    const chunksTotal = Math.max(1, Math.ceil(data.byteLength / chunkBytes));
    let chunk = 0;
    const writeMore = (): void => {
      while (chunk < chunksTotal) {
        const offset = chunk * chunkBytes;
        const slice = data.subarray(offset, Math.min(offset + chunkBytes, data.byteLength));
        const last = chunk === chunksTotal - 1;
        const ok = call.write({
          groupId,
          fromNodeId: from,
          toNodeId: message.to,
          message: chunk === 0 ? head : EMPTY,
          totalBytes: data.byteLength,
          offset,
          data: slice,
          last,
        });
        chunk += 1;
        if (last) {
          call.end();
          return;
        }
        if (!ok) {
          call.once("drain", writeMore);
          return;
        }
      }
    };
    writeMore();
  });
}

interface Assembly {
  groupId: string;
  head: Message | undefined;
  data: Uint8Array | undefined;
  received: number;
  error: string | undefined;
}

export class SnapshotReceiver {
  constructor(
    private readonly nodeId: NodeId,
    private readonly limits: RaftHostLimits,
    private readonly deliver: (groupId: string, message: Message) => void,
  ) {}

  receive(
    call: grpc.ServerReadableStream<SnapshotChunkWire, SnapshotAckWire>,
    callback: grpc.sendUnaryData<SnapshotAckWire>,
  ): void {
    const a: Assembly = {
      groupId: "",
      head: undefined,
      data: undefined,
      received: 0,
      error: undefined,
    };
    let done = false;
    const finish = (ack: SnapshotAckWire): void => {
      if (done) return;
      done = true;
      callback(null, ack);
    };
    call.on("data", (chunk: SnapshotChunkWire) => {
      if (a.error || done) return;
      a.error = this.accept(a, chunk);
      if (a.error) {
        finish({ accepted: false, errorMessage: a.error });
        return;
      }
      if (chunk.last) {
        if (a.received !== a.data!.byteLength) {
          finish({
            accepted: false,
            errorMessage: `snapshot ended at ${a.received} of ${a.data!.byteLength} bytes`,
          });
          return;
        }
        const head = a.head!;
        this.deliver(a.groupId, {
          ...head,
          snapshot: { metadata: head.snapshot!.metadata, data: a.data! },
        });
        finish({ accepted: true, errorMessage: "" });
      }
    });
    call.on("end", () =>
      finish({ accepted: false, errorMessage: "snapshot stream ended before the last chunk" }),
    );
    call.on("error", () => {
      done = true;
    });
  }

  /** Takes one chunk; returns why it is refused, or undefined. */
  private accept(a: Assembly, chunk: SnapshotChunkWire): string | undefined {
    const total = Number(chunk.totalBytes);
    const offset = Number(chunk.offset);
    if (a.head === undefined) {
      if (chunk.toNodeId !== this.nodeId)
        return `snapshot for node ${chunk.toNodeId} reached node ${this.nodeId}`;
      if (!(total >= 0 && total <= this.limits.snapshotBytesMax))
        return `snapshot of ${total} bytes exceeds ${this.limits.snapshotBytesMax}`;
      let head: Message;
      try {
        head = decodeMessage(chunk.message);
      } catch (err) {
        return `undecodable snapshot message: ${(err as Error).message}`;
      }
      if (head.type !== MessageType.Snapshot || !head.snapshot)
        return "first chunk is not a snapshot message";
      a.head = head;
      a.groupId = chunk.groupId;
      a.data = new Uint8Array(total);
    }
    if (chunk.groupId !== a.groupId) return "group id changed within one snapshot transfer";
    if (offset !== a.received) return `chunk at offset ${offset}, expected ${a.received}`;
    if (offset + chunk.data.byteLength > a.data!.byteLength)
      return `chunk overruns the declared ${a.data!.byteLength} bytes`;
    a.data!.set(chunk.data, offset);
    a.received += chunk.data.byteLength;
    return undefined;
  }
}

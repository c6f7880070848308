// The gRPC transport between hosts of one role. Outgoing: one long-lived client stream per
// peer; send() only queues, and flush() (called once at the end of each scheduler turn) writes
// one RaftBatch frame per peer holding every group's messages, heartbeats included. Queues are
// bounded: on overflow or disconnect messages are dropped and reported unreachable (Raft
// retries). Snapshot messages go over InstallSnapshot in bounded chunks instead.
// Empty Appends (a leader's commit broadcast, a caught-up follower's probe) wait like plain
// heartbeats, and a later Append of the same group to the same peer replaces a queued one: it
// carries the same or a newer commit (see isEmptyAppend).
import * as grpc from "@grpc/grpc-js";
import type { Logger } from "pino";
import { decodeMessage, messageSizeBytes } from "../raft/codec.js";
import { MessageType, type Message, type NodeId } from "../raft/types.js";
import type { RaftHostLimits } from "./limits.js";
import {
  encodeMessageFrame,
  FRAME_HEAD_BYTES_MAX,
  queuedEnvelopeBytes,
  type QueuedMessage,
} from "./batch-frame.js";
import {
  loadRaftProto,
  type RaftBatchWire,
  type RaftTransportClient,
  type SnapshotAckWire,
  type SnapshotChunkWire,
} from "./raft-proto.js";
import { SnapshotReceiver, sendSnapshot } from "./snapshot-transfer.js";
import { PeerLossDetector } from "./peer-loss.js";
import { channelCredentials } from "../server/tls/credentials.js";
import { raftPeerChannelOptions } from "../grpc/grpc-options.js";
import type { Http2Session } from "node:http2";

export interface TransportHandler {
  /** An incoming message for a group (unknown groups are the handler's to drop). */
  deliver(groupId: string, message: Message): void;
  /** A message to peer was dropped (queue overflow, disconnect). */
  unreachable(groupId: string, peer: NodeId): void;
  /** An outgoing snapshot transfer finished. */
  snapshotDone(groupId: string, peer: NodeId, ok: boolean): void;
  /** A frame from peer carried a new incarnation: the peer process restarted. */
  peerRestarted?(peer: NodeId): void;
  /** Both our streams with peer broke (its process died or its sockets were reset): peer-loss.ts. */
  peerLost?(peer: NodeId): void;
}

export interface TransportStats {
  batchesSent: number;
  messagesSent: number;
  messagesDropped: number;
  batchesReceived: number;
  messagesReceived: number;
}

interface Peer {
  readonly id: NodeId;
  address: string;
  client: RaftTransportClient | undefined;
  call: grpc.ClientWritableStream<RaftBatchWire | Buffer> | undefined;
  /** False while the stream's buffer is full; flush resumes on 'drain'. */
  writable: boolean;
  /** Messages are encoded only when their frame is built (straight into it). */
  queue: QueuedMessage[];
  queueBytes: number;
  /** Something other than a plain heartbeat or an empty Append is queued: flush at the end of this turn. */
  urgent: boolean;
  /** The queued empty Append of each group (at most one): a later Append of the group replaces it. */
  emptyAppends: Map<string, QueuedMessage>;
  /** Groups that wrote on the current call: told unreachable when it breaks (bounded by the groups). */
  groupsOnCall: Set<string>;
  backoffMs: number;
  retryAtMs: number;
  callStartedMs: number;
  /** Liveness clock (ticks) when the last frame to this peer was written. */
  sentAtTick: number;
}

/** What the last frame from a node told us (node-level liveness). */
interface Heard {
  atTick: number;
  incarnation: number | undefined;
}

const HEALTHY_CALL_MS = 1_000;
/** Senders tracked for liveness; node ids of one role are few, a flood of fake ones stops here. */
const HEARD_NODES_MAX = 4_096;

/** Raft peer channels: derived from the one options table (libs/grpc/grpc-options.ts). */
export function channelOptions(limits: RaftHostLimits): grpc.ChannelOptions {
  return raftPeerChannelOptions({
    flowControlWindowBytes: limits.flowControlWindowBytes,
    messageBytesMax: limits.grpcMessageBytesMax,
  });
}

export class RaftTransport {
  readonly stats: TransportStats = {
    batchesSent: 0,
    messagesSent: 0,
    messagesDropped: 0,
    batchesReceived: 0,
    messagesReceived: 0,
  };
  private readonly peers = new Map<NodeId, Peer>();
  private readonly dirty = new Set<Peer>();
  private readonly receiver: SnapshotReceiver;
  private snapshotTransfers = 0;
  private closed = false;
  /** This process's incarnation, on every frame: peers learn from a change that we restarted. */
  readonly incarnation = 1 + Math.floor(Math.random() * 2 ** 48);
  /**
   * Node-level liveness clock, in the host's ticks (set by the host every tick). Ticks, not
   * milliseconds, as the Raft election clock counts them: a stalled event loop does not make
   * every peer look dead at once.
   */
  clockTicks = 0;
  private readonly heard = new Map<NodeId, Heard>();
  private readonly silent: NodeId[] = [];
  private readonly loss: PeerLossDetector;

  constructor(
    private readonly nodeId: NodeId,
    private readonly handler: TransportHandler,
    private readonly limits: RaftHostLimits,
    private readonly logger: Logger,
    /** Plain heartbeats wait for the tick flush (fewer frames); false sends them every turn. */
    private readonly deferHeartbeats = true,
    /** Peer-loss window (peer-loss.ts): both breaks within it, and at most one report per peer per window: an election timeout. */
    lossRearmMs = 1_500,
  ) {
    this.loss = new PeerLossDetector(lossRearmMs, (peer) => {
      if (this.closed) return;
      this.logger.info({ peer }, "raft connections to peer lost");
      this.handler.peerLost?.(peer);
    });
    this.receiver = new SnapshotReceiver(nodeId, limits, (groupId, message) =>
      handler.deliver(groupId, message),
    );
  }

  setPeerAddress(id: NodeId, address: string): void {
    const peer = this.peers.get(id);
    if (!peer) {
      this.peers.set(id, {
        id,
        address,
        client: undefined,
        call: undefined,
        writable: true,
        queue: [],
        queueBytes: 0,
        urgent: false,
        emptyAppends: new Map(),
        groupsOnCall: new Set(),
        backoffMs: this.limits.reconnectBackoffMsMin,
        retryAtMs: 0,
        callStartedMs: 0,
        sentAtTick: -Infinity,
      });
      return;
    }
    if (peer.address === address) return;
    peer.address = address;
    this.disconnect(peer, "address changed");
    peer.retryAtMs = 0;
  }

  /** Queues a message; it leaves at the next flush(). */
  send(groupId: string, message: Message): void {
    const peer = this.peers.get(message.to);
    if (!peer || this.closed) {
      this.drop(groupId, message.to);
      return;
    }
    if (message.type === MessageType.Snapshot) {
      this.startSnapshot(peer, groupId, message);
      return;
    }
    const sizeBytes = messageSizeBytes(message);
    const queued: QueuedMessage = { groupId, message, sizeBytes };
    if (FRAME_HEAD_BYTES_MAX + queuedEnvelopeBytes(queued) > this.limits.grpcMessageBytesMax) {
      // No frame can carry it: the peer's server would refuse it and break the stream for every group.
      this.logger.warn(
        {
          peer: peer.id,
          groupId,
          type: message.type,
          sizeBytes,
          frameBytesMax: this.limits.grpcMessageBytesMax,
        },
        "raft message larger than a frame dropped",
      );
      this.drop(groupId, peer.id);
      return;
    }
    if (
      peer.queue.length >= this.limits.peerQueueMessagesMax ||
      peer.queueBytes + sizeBytes > this.limits.peerQueueBytesMax
    ) {
      this.drop(groupId, peer.id);
      return;
    }
    if (message.type === MessageType.Append) this.replaceEmptyAppend(peer, groupId, queued);
    peer.queue.push(queued);
    peer.queueBytes += sizeBytes;
    if (!isPlainHeartbeat(message) && !isEmptyAppend(message)) peer.urgent = true;
    this.dirty.add(peer);
  }

  /**
   * An Append of groupId to peer replaces the group's queued empty Append, if any. Raft allows
   * any message to be lost; this one says nothing the newer does not: within a term the leader's
   * commit only grows, and an empty Append takes no inflight slot, so no answer to it is awaited.
   * Not reported unreachable (the peer is fine).
   */
  private replaceEmptyAppend(peer: Peer, groupId: string, queued: QueuedMessage): void {
    const older = peer.emptyAppends.get(groupId);
    if (older !== undefined) {
      const at = peer.queue.indexOf(older);
      if (at >= 0) {
        peer.queue.splice(at, 1);
        peer.queueBytes -= older.sizeBytes;
      }
      peer.emptyAppends.delete(groupId);
    }
    if (queued.message.entries.length === 0) peer.emptyAppends.set(groupId, queued);
  }

  /**
   * Writes everything queued per peer, in frames of at most grpcMessageBytesMax (usually one). With heartbeatsToo false (end of a
   * scheduler turn), peers holding only plain heartbeats wait for the next tick's flush, so
   * every group's heartbeats and responses share one frame per tick instead of one per phase.
   */
  flush(heartbeatsToo = true): void {
    if (this.dirty.size === 0) return;
    const nowMs = performance.now();
    for (const peer of this.dirty) {
      if (!heartbeatsToo && !peer.urgent && this.deferHeartbeats) continue;
      if (!peer.call && !this.connect(peer, nowMs) && !this.connectForVotes(peer, nowMs)) {
        this.dropQueue(peer);
        continue;
      }
      if (!peer.writable || peer.queue.length === 0) continue;
      const messages = peer.queue;
      peer.queue = [];
      peer.queueBytes = 0;
      peer.urgent = false;
      peer.emptyAppends.clear();
      for (const m of messages) peer.groupsOnCall.add(m.groupId);
      this.stats.messagesSent += messages.length;
      let writable = true;
      for (const frame of framesOf(messages, this.limits.grpcMessageBytesMax)) {
        this.stats.batchesSent += 1;
        writable =
          peer.call!.write(encodeMessageFrame(this.nodeId, peer.id, frame, this.incarnation)) &&
          writable;
      }
      peer.writable = writable;
      peer.sentAtTick = this.clockTicks;
    }
    for (const peer of [...this.dirty]) if (peer.queue.length === 0) this.dirty.delete(peer);
  }

  /**
   * Node-level liveness beat: an empty frame to every peer that got no frame for `everyTicks`.
   * Quiesced groups send nothing, so these frames are what tells their followers that this
   * node (and so their leader) is alive: one frame per peer per interval, whatever the groups.
   */
  beat(everyTicks: number): void {
    if (this.closed) return;
    const nowMs = performance.now();
    for (const peer of this.peers.values()) {
      if (this.clockTicks - peer.sentAtTick < everyTicks) continue;
      if (!peer.call && !this.connect(peer, nowMs)) continue;
      if (!peer.writable) continue;
      peer.writable = peer.call!.write(
        encodeMessageFrame(this.nodeId, peer.id, [], this.incarnation),
      );
      peer.sentAtTick = this.clockTicks;
    }
  }

  /**
   * Nodes we have not heard from for more than timeoutTicks: peers with an address never heard
   * from, and any sender heard from before (a leader's frames can reach us before we know its
   * address). Reused array.
   */
  silentPeers(timeoutTicks: number): readonly NodeId[] {
    this.silent.length = 0;
    for (const id of this.peers.keys()) if (!this.heard.has(id)) this.silent.push(id);
    for (const [id, h] of this.heard)
      if (this.clockTicks - h.atTick > timeoutTicks) this.silent.push(id);
    return this.silent;
  }

  private noteHeard(from: NodeId, incarnation: number | undefined): void {
    const h = this.heard.get(from);
    if (h === undefined) {
      if (this.heard.size >= HEARD_NODES_MAX) return;
      this.heard.set(from, { atTick: this.clockTicks, incarnation });
      return;
    }
    h.atTick = this.clockTicks;
    if (incarnation === undefined || incarnation === h.incarnation) return;
    const restarted = h.incarnation !== undefined;
    h.incarnation = incarnation;
    if (restarted) this.handler.peerRestarted?.(from);
  }

  private connect(peer: Peer, nowMs: number): boolean {
    if (nowMs < peer.retryAtMs || this.closed) return false;
    const { Client } = loadRaftProto();
    peer.client ??= new Client(peer.address, channelCredentials(), channelOptions(this.limits));
    const call = peer.client.Stream((err: grpc.ServiceError | null) => {
      if (peer.call === call) this.onCallEnded(peer, err);
    });
    call.on("drain", () => {
      if (peer.call !== call) return;
      peer.writable = true;
      if (peer.queue.length > 0) {
        this.dirty.add(peer);
        this.flush();
      }
    });
    call.on("error", () => {}); // reported through the callback
    peer.call = call;
    peer.writable = true;
    peer.callStartedMs = nowMs;
    return true;
  }

  /**
   * Votes do not wait out a reconnect backoff: a dropped pre-vote costs its campaign a whole
   * randomized election timeout, where the peer may have come back since our last refused
   * attempt (a node restarted just before the leader died: `--back-to-back` failover). A fresh
   * channel skips grpc-js's own backoff too. Bounded by elections: a few per election timeout.
   */
  private connectForVotes(peer: Peer, nowMs: number): boolean {
    if (this.closed || !peer.queue.some((q) => isVote(q.message))) return false;
    this.skipBackoff(peer);
    return this.connect(peer, nowMs);
  }

  /** The next connect to peer goes at once, on a fresh channel (no grpc-js backoff either). */
  private skipBackoff(peer: Peer): void {
    peer.retryAtMs = 0;
    peer.client?.close();
    peer.client = undefined;
  }

  private onCallEnded(peer: Peer, err: grpc.ServiceError | null): void {
    const reason = err ? err.message : "stream ended";
    const nowMs = performance.now();
    const healthy = nowMs - peer.callStartedMs >= HEALTHY_CALL_MS;
    peer.backoffMs = healthy
      ? this.limits.reconnectBackoffMsMin
      : Math.min(peer.backoffMs * 2, this.limits.reconnectBackoffMsMax);
    const jitter = 0.8 + 0.4 * Math.random();
    peer.retryAtMs = nowMs + peer.backoffMs * jitter;
    this.logger.debug(
      { peer: peer.id, reason, retryInMs: Math.round(peer.backoffMs * jitter) },
      "raft stream to peer ended",
    );
    peer.call = undefined;
    peer.writable = true;
    this.dropQueue(peer);
    if (this.closed) return;
    const { connected, refused } = callEnd(err);
    // A connected stream that broke is probed at the next tick past its backoff (beat), not at
    // the next liveness beat: a refused reconnect is how a peer learns a process is gone when
    // its other stream with it says nothing (peer-loss.ts).
    if (connected) peer.sentAtTick = -Infinity;
    this.loss.outgoingBroken(peer.id, connected);
    if (refused) this.loss.refused(peer.id);
  }

  /**
   * A stream from peer opened while ours to it is down: it listens again (restarted, or healed),
   * so reconnect at the next send on a fresh channel rather than after our backoff and grpc-js's
   * own (up to 2 s each): a restarted node that cannot reach the others cannot help elect.
   */
  private reconnectSoon(id: NodeId): void {
    const peer = this.peers.get(id);
    if (peer === undefined || peer.call !== undefined || this.closed) return;
    peer.backoffMs = this.limits.reconnectBackoffMsMin;
    peer.sentAtTick = -Infinity;
    this.skipBackoff(peer);
  }

  private disconnect(peer: Peer, reason: string): void {
    const call = peer.call;
    peer.call = undefined;
    call?.cancel();
    peer.client?.close();
    peer.client = undefined;
    this.logger.debug({ peer: peer.id, reason }, "raft stream to peer closed");
    this.dropQueue(peer);
  }

  private dropQueue(peer: Peer): void {
    const groups = new Set(peer.queue.map((e) => e.groupId));
    if (!peer.call) {
      for (const g of peer.groupsOnCall) groups.add(g);
      peer.groupsOnCall.clear();
    }
    this.stats.messagesDropped += peer.queue.length;
    peer.queue = [];
    peer.queueBytes = 0;
    peer.urgent = false;
    peer.emptyAppends.clear();
    this.dirty.delete(peer);
    for (const g of groups) this.handler.unreachable(g, peer.id);
  }

  private drop(groupId: string, to: NodeId): void {
    this.stats.messagesDropped += 1;
    this.handler.unreachable(groupId, to);
  }

  private startSnapshot(peer: Peer, groupId: string, message: Message): void {
    if (this.snapshotTransfers >= this.limits.snapshotTransfersMax) {
      this.handler.snapshotDone(groupId, peer.id, false);
      return;
    }
    this.snapshotTransfers += 1;
    const { Client } = loadRaftProto();
    peer.client ??= new Client(peer.address, channelCredentials(), channelOptions(this.limits));
    // A failed transfer becomes `false` below; the chain itself has no caller to report to.
    void sendSnapshot(peer.client, this.nodeId, groupId, message, this.limits)
      .then(
        (ok) => ok,
        (err: Error) => {
          this.logger.warn(
            { peer: peer.id, groupId, err: err.message },
            "snapshot transfer failed",
          );
          return false;
        },
      )
      .then((ok) => {
        this.snapshotTransfers -= 1;
        this.handler.snapshotDone(groupId, peer.id, ok);
      });
  }

  /** The server side, for the process's one gRPC server. */
  grpcService(): {
    definition: grpc.ServiceDefinition;
    implementation: grpc.UntypedServiceImplementation;
  } {
    const implementation: grpc.UntypedServiceImplementation = {
      Stream: (
        call: grpc.ServerReadableStream<RaftBatchWire, unknown>,
        callback: grpc.sendUnaryData<unknown>,
      ) => {
        raiseServerWindow(call, this.limits.flowControlWindowBytes);
        let batches = 0;
        // The sender, named by its first frame: its stream closing feeds peer-loss detection.
        let from: NodeId | undefined;
        let closed = false;
        const onClosed = (): void => {
          if (closed) return;
          closed = true;
          if (from !== undefined) this.loss.incomingClosed(from);
        };
        call.on("data", (batch: RaftBatchWire) => {
          batches += 1;
          if (
            from === undefined &&
            !closed &&
            batch.toNodeId === this.nodeId &&
            batch.fromNodeId !== this.nodeId
          ) {
            from = batch.fromNodeId;
            this.loss.incomingOpened(from);
            this.reconnectSoon(from);
          }
          this.onBatch(batch);
        });
        call.on("end", () => {
          onClosed();
          callback(null, { batchesReceived: String(batches) });
        });
        call.on("cancelled", onClosed);
        call.on("close", onClosed);
        call.on("error", onClosed);
      },
      InstallSnapshot: (
        call: grpc.ServerReadableStream<SnapshotChunkWire, SnapshotAckWire>,
        callback: grpc.sendUnaryData<SnapshotAckWire>,
      ) => {
        raiseServerWindow(call, this.limits.flowControlWindowBytes);
        this.receiver.receive(call, callback);
      },
    };
    return { definition: loadRaftProto().definition, implementation };
  }

  private onBatch(batch: RaftBatchWire): void {
    if (this.closed || batch.toNodeId !== this.nodeId) return;
    this.stats.batchesReceived += 1;
    if (batch.fromNodeId !== this.nodeId) {
      this.noteHeard(batch.fromNodeId, batch.incarnation);
      this.loss.heard(batch.fromNodeId);
    }
    for (const envelope of batch.messages) {
      let message: Message;
      try {
        message = decodeMessage(envelope.message);
      } catch (err) {
        this.logger.warn(
          { groupId: envelope.groupId, from: batch.fromNodeId, err: (err as Error).message },
          "dropping undecodable raft message",
        );
        continue;
      }
      // A frame speaks for its sender only (the gRPC layer bound the sender to its certificate).
      if (message.from !== batch.fromNodeId) {
        this.logger.warn(
          { groupId: envelope.groupId, from: batch.fromNodeId, claimed: message.from },
          "dropping raft message that names another sender than its frame",
        );
        continue;
      }
      this.stats.messagesReceived += 1;
      this.handler.deliver(envelope.groupId, message);
    }
  }

  close(): void {
    this.closed = true;
    for (const peer of this.peers.values()) {
      const call = peer.call;
      peer.call = undefined;
      call?.end();
      peer.client?.close();
      peer.client = undefined;
      peer.queue = [];
      peer.emptyAppends.clear();
    }
    this.dirty.clear();
  }
}

/**
 * How a client stream ended, from grpc-js's status: `connected` when it had reached the peer (a
 * break or an end, not "No connection established"), `refused` when the last connect attempt
 * found nothing listening (ECONNREFUSED). Both are read from the status details: grpc-js
 * exposes no error code for them (pinned by transport-call-end.test.ts).
 */
export function callEnd(err: { readonly details?: string; readonly message?: string } | null): {
  connected: boolean;
  refused: boolean;
} {
  if (err === null) return { connected: true, refused: false };
  const text = err.details ?? err.message ?? "";
  const notConnected = text.includes("No connection established");
  return { connected: !notConnected, refused: notConnected && text.includes("ECONNREFUSED") };
}

/**
 * An Append without entries: a leader's commit broadcast (after every commit, to followers that
 * already hold every entry) or a probe of a follower believed caught up. Neither is on a commit's
 * path: the next Append of the group (the next proposal's) carries the commit, and a probe's
 * follower answers within a heartbeat interval; waiting halves the frames and follower turns per
 * commit at 1 in flight (docs/raft-performance.md). Followers learn a commit up to one
 * heartbeat interval later when no proposal follows.
 */
function isEmptyAppend(m: Message): boolean {
  return m.type === MessageType.Append && m.entries.length === 0;
}

/** Election traffic: (pre-)vote requests and their answers. */
function isVote(m: Message): boolean {
  return (
    m.type === MessageType.PreVote ||
    m.type === MessageType.PreVoteResponse ||
    m.type === MessageType.Vote ||
    m.type === MessageType.VoteResponse
  );
}

/** Heartbeats and their responses without a read-index context can wait for the next tick. */
function isPlainHeartbeat(m: Message): boolean {
  return (
    (m.type === MessageType.Heartbeat || m.type === MessageType.HeartbeatResponse) &&
    (m.context === undefined || m.context.byteLength === 0)
  );
}

/**
 * grpc-js servers do not take a flow-control window option; raise the receive windows of the
 * underlying HTTP/2 session directly (best effort: internal fields, checked at every step).
 */
/** Consecutive runs of messages whose frame fits in frameBytesMax (send() refused any that alone would not). */
function framesOf(messages: QueuedMessage[], frameBytesMax: number): QueuedMessage[][] {
  const budget = frameBytesMax - FRAME_HEAD_BYTES_MAX;
  const frames: QueuedMessage[][] = [];
  let frame: QueuedMessage[] = [];
  let bytes = 0;
  for (const m of messages) {
    const size = queuedEnvelopeBytes(m);
    if (frame.length > 0 && bytes + size > budget) {
      frames.push(frame);
      frame = [];
      bytes = 0;
    }
    frame.push(m);
    bytes += size;
  }
  if (frame.length > 0) frames.push(frame);
  return frames;
}

/** The grpc-js internals raiseServerWindow reaches into (not public API, hence all optional). */
interface InternalCallNode {
  readonly stream?: { readonly session?: Http2Session & { __ternWindowRaised?: boolean } };
  readonly nextCall?: InternalCallNode;
}

function raiseServerWindow(call: unknown, windowBytes: number): void {
  try {
    let node: InternalCallNode | undefined = (
      call as { call?: InternalCallNode } | null | undefined
    )?.call;
    for (let depth = 0; depth < 4 && node; depth++) {
      const session = node.stream?.session;
      if (session && typeof session.setLocalWindowSize === "function") {
        if (!session.__ternWindowRaised) {
          session.__ternWindowRaised = true;
          session.setLocalWindowSize(windowBytes);
          session.settings({ initialWindowSize: Math.min(windowBytes, 2 ** 31 - 1) });
        }
        return;
      }
      node = node.nextCall;
    }
  } catch {
    // Best effort only: the default window still works, just slower.
  }
}

// Pushes full metadata views to WatchMetadata streams. Each subscriber's queue holds at most
// one pending view: views are complete, so a slow reader only ever needs the newest one, and
// memory stays bounded however far behind it falls. Keepalives go out on a timer.
// Slots: clients share subscribersMax; a cluster process (a node the caller checked: registered,
// and with TLS of the certificate's role) has a slot of its own per node id, outside that
// bound, so clients holding every client slot cannot keep a restarted broker from its view. A
// node's newer watch replaces its older one (a restarted process's old stream may linger).
// Cost: a view is encoded once per publication (not per stream: with `encode`, streams get the
// bytes), and publications are paced by their own cost, so a burst of changes to a large
// cluster (thousands of partitions electing leaders) takes a bounded share of this process.
import type * as grpc from "@grpc/grpc-js";
import { TernError } from "../../libs/common/errors.js";
import type { Logger } from "../../libs/common/logger.js";
import type { Scheduler, TimerHandle } from "../../libs/runtime/scheduler.js";
import type {
  ClusterMetadata,
  WatchMetadataRequest__Output,
  WatchMetadataResponse,
} from "../../libs/common/proto-types/index.js";

type WatchCall = grpc.ServerWritableStream<WatchMetadataRequest__Output, WatchMetadataResponse>;

interface Subscriber {
  readonly call: WatchCall;
  /** The newest view not yet written because the stream was backed up. */
  pending: Outgoing | undefined;
  blocked: boolean;
  lastVersion: bigint;
  /** Whether this stream gets the SCRAM credentials (a tern process's watch). */
  readonly secrets: boolean;
  /** The node id of a cluster process's watch (its own slot); undefined for a client's. */
  readonly node: number | undefined;
}

export interface MetadataPublisherOptions {
  /** Builds the current wire view (tern.v1.ClusterMetadata) and its version. */
  readonly view: (secrets: boolean) => { version: bigint; metadata: ClusterMetadata };
  readonly keepaliveMs: number;
  readonly subscribersMax: number;
  readonly logger: Logger;
  /** The keepalive timer and the publication hop (the process runtime's). */
  readonly scheduler: Scheduler;
  /**
   * The stream's serializer: a view is then encoded once per publication and its bytes written
   * to every stream (the method's responseSerialize passes bytes through: compose.ts).
   */
  readonly encode?: (message: WatchMetadataResponse) => Buffer;
  /** A monotonic clock in milliseconds (publication pacing). */
  readonly nowMs: () => number;
}

/**
 * The gap after a publication is this many times what building and encoding its views took:
 * publishing then takes at most about 1 / (1 + factor) of the process.
 */
const PUBLISH_GAP_PER_COST = 4;
/** Bound on that gap: a change is published within this long of the one before. */
const PUBLISH_GAP_MAX_MS = 500;

/** What a stream is written: a message, or its bytes (encoded once for every stream). */
type Outgoing = WatchMetadataResponse | Buffer;

export class MetadataPublisher {
  private readonly subscribers = new Set<Subscriber>();
  /** The cluster processes' watches by node id (also in `subscribers`). */
  private readonly nodes = new Map<number, Subscriber>();
  private clients = 0;
  private readonly keepaliveTimer: TimerHandle;
  private publishScheduled = false;
  /** When the last publication ended and the earliest the next may start. */
  private nextPublishMs = 0;
  private keepaliveBytes: Buffer | undefined;
  private closed = false;

  constructor(private readonly options: MetadataPublisherOptions) {
    this.keepaliveTimer = options.scheduler.setInterval(
      () => this.keepalive(),
      options.keepaliveMs,
    );
  }

  subscriberCount(): number {
    return this.subscribers.size;
  }

  /** Open watches of clients (the ones subscribersMax bounds). */
  clientSubscriberCount(): number {
    return this.clients;
  }

  /**
   * Serves one WatchMetadata call until the client cancels or the publisher closes. `node`: the
   * watching cluster process's node id, as the caller checked it (its own slot); else a client.
   */
  subscribe(call: WatchCall, afterVersion: bigint, secrets = false, node?: number): void {
    if (this.closed) throw new TernError("SHUTTING_DOWN", "this controller is shutting down");
    if (node === undefined && this.clients >= this.options.subscribersMax) {
      throw new TernError(
        "THROTTLING_QUOTA_EXCEEDED",
        `this controller already serves ${this.options.subscribersMax} client metadata watches`,
      );
    }
    const sub: Subscriber = {
      call,
      pending: undefined,
      blocked: false,
      lastVersion: afterVersion,
      secrets,
      node,
    };
    if (node !== undefined) {
      const older = this.nodes.get(node);
      if (older !== undefined) {
        this.remove(older);
        endQuietly(older.call);
      }
      this.nodes.set(node, sub);
    } else this.clients++;
    this.subscribers.add(sub);
    const drop = (): void => this.remove(sub);
    call.on("cancelled", drop);
    call.on("close", drop);
    call.on("error", drop);
    call.on("drain", () => {
      sub.blocked = false;
      const view = sub.pending;
      sub.pending = undefined;
      if (view) this.write(sub, view);
    });
    const { version, metadata } = this.options.view(secrets);
    if (version > afterVersion || afterVersion === 0n) {
      sub.lastVersion = version;
      this.write(sub, this.encoded({ metadata, keepalive: false }));
    }
  }

  /** Schedules one publication of the current view (coalesces bursts of changes). */
  changed(): void {
    if (this.publishScheduled || this.closed) return;
    this.publishScheduled = true;
    const run = (): void => {
      this.publishScheduled = false;
      if (!this.closed) this.publish();
    };
    const waitMs = this.nextPublishMs - this.options.nowMs();
    if (waitMs > 0) this.options.scheduler.setTimeout(run, waitMs);
    else this.options.scheduler.setImmediate(run);
  }

  private publish(): void {
    if (this.subscribers.size === 0) return;
    const startMs = this.options.nowMs();
    // At most two views per publication: with and without the credentials.
    const views = new Map<boolean, { version: bigint; message: Outgoing }>();
    for (const sub of this.subscribers) {
      let view = views.get(sub.secrets);
      if (view === undefined) {
        const { version, metadata } = this.options.view(sub.secrets);
        view = { version, message: this.encoded({ metadata, keepalive: false }) };
        views.set(sub.secrets, view);
      }
      sub.lastVersion = view.version;
      this.write(sub, view.message);
    }
    const endMs = this.options.nowMs();
    this.nextPublishMs =
      endMs + Math.min(PUBLISH_GAP_MAX_MS, (endMs - startMs) * PUBLISH_GAP_PER_COST);
  }

  private encoded(message: WatchMetadataResponse): Outgoing {
    return this.options.encode ? this.options.encode(message) : message;
  }

  private keepalive(): void {
    const encode = this.options.encode;
    const message = encode
      ? (this.keepaliveBytes ??= encode({ keepalive: true }))
      : { keepalive: true };
    for (const sub of this.subscribers) {
      if (!sub.blocked) this.write(sub, message, true);
    }
  }

  private write(sub: Subscriber, message: Outgoing, keepalive = false): void {
    if (sub.blocked) {
      if (!keepalive) sub.pending = message;
      return;
    }
    try {
      // A Buffer is the encoded message (the serializer passes it through: compose.ts).
      sub.blocked = !sub.call.write(message as WatchMetadataResponse);
    } catch (e) {
      this.options.logger.debug({ err: e }, "metadata watch write failed; dropping subscriber");
      this.remove(sub);
    }
  }

  /** Forgets a subscriber and frees its slot (once). */
  private remove(sub: Subscriber): void {
    if (!this.subscribers.delete(sub)) return;
    if (sub.node === undefined) this.clients--;
    else if (this.nodes.get(sub.node) === sub) this.nodes.delete(sub.node);
  }

  /** Ends every stream (the clients reconnect to another controller). */
  close(): void {
    this.closed = true;
    this.options.scheduler.clearInterval(this.keepaliveTimer);
    for (const sub of this.subscribers) endQuietly(sub.call);
    this.subscribers.clear();
    this.nodes.clear();
    this.clients = 0;
  }
}

function endQuietly(call: WatchCall): void {
  try {
    call.end();
  } catch {
    // already gone
  }
}

// Pushes full metadata views to WatchMetadata streams. Each subscriber's queue holds at most
// one pending view: views are complete, so a slow reader only ever needs the newest one, and
// memory stays bounded however far behind it falls. Keepalives go out on a timer.
// Slots: clients share subscribersMax; a cluster process (a node the caller checked: registered,
// and with TLS of the certificate's role) has a slot of its own per node id, outside that
// bound, so clients holding every client slot cannot keep a restarted broker from its view. A
// node's newer watch replaces its older one (a restarted process's old stream may linger).
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
  pending: WatchMetadataResponse | undefined;
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
}

export class MetadataPublisher {
  private readonly subscribers = new Set<Subscriber>();
  /** The cluster processes' watches by node id (also in `subscribers`). */
  private readonly nodes = new Map<number, Subscriber>();
  private clients = 0;
  private readonly keepaliveTimer: TimerHandle;
  private publishScheduled = false;
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
      this.write(sub, { metadata, keepalive: false });
    }
  }

  /** Schedules one publication of the current view (coalesces bursts of changes). */
  changed(): void {
    if (this.publishScheduled || this.closed) return;
    this.publishScheduled = true;
    this.options.scheduler.setImmediate(() => {
      this.publishScheduled = false;
      this.publish();
    });
  }

  private publish(): void {
    if (this.subscribers.size === 0) return;
    // At most two views per publication: with and without the credentials.
    const views = new Map<boolean, { version: bigint; metadata: ClusterMetadata }>();
    for (const sub of this.subscribers) {
      let view = views.get(sub.secrets);
      if (view === undefined) views.set(sub.secrets, (view = this.options.view(sub.secrets)));
      sub.lastVersion = view.version;
      this.write(sub, { metadata: view.metadata, keepalive: false });
    }
  }

  private keepalive(): void {
    for (const sub of this.subscribers) {
      if (!sub.blocked) this.write(sub, { keepalive: true });
    }
  }

  private write(sub: Subscriber, message: WatchMetadataResponse): void {
    if (sub.blocked) {
      if (!message.keepalive) sub.pending = message;
      return;
    }
    try {
      sub.blocked = !sub.call.write(message);
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

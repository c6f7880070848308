// The client's view of the cluster, from the controllers. Cached for metadataMaxAgeMs;
// refreshed on demand (NOT_LEADER_OR_FOLLOWER, NOT_COORDINATOR, UNKNOWN_TOPIC_OR_PARTITION)
// with refreshes coalesced (one in flight) and rate-limited (refreshIntervalMsMin apart).
import type { ClientLogger as Logger } from "../../common/client-logger.js";
import { TernError } from "../../common/errors.js";
import type {
  ClusterMetadata,
  NodeInfo,
  PartitionInfo,
  Role,
  TopicInfo,
} from "../../metadata/types.js";
import { parseBootstrap } from "./bootstrap.js";
import type { PasswordCredentials } from "../../grpc/client-credentials.js";
import { sleep } from "../retry/retry.js";
import type { ControllerCalls, Transport } from "./transport.js";

export const METADATA_MAX_AGE_MS_DEFAULT = 30_000;
export const REFRESH_INTERVAL_MS_MIN = 100;
export const CONTROLLER_REQUEST_TIMEOUT_MS = 5_000;
export const CONTROLLER_ATTEMPTS_MAX = 4;

export interface MetadataCacheOptions {
  readonly bootstrap: string | readonly string[];
  readonly logger: Logger;
  readonly metadataMaxAgeMs?: number;
  readonly credentials?: PasswordCredentials | undefined;
  /** Where the controller quorum's client comes from (its channels are the transport's). */
  readonly transport: Transport;
}

export class MetadataCache {
  private controllerClient: ControllerCalls;
  private controllersKnown = false;
  private view: ClusterMetadata | undefined;
  private fetchedAtMs = 0;
  private inFlight: Promise<ClusterMetadata> | undefined;
  private readonly maxAgeMs: number;

  constructor(private readonly opts: MetadataCacheOptions) {
    this.maxAgeMs = opts.metadataMaxAgeMs ?? METADATA_MAX_AGE_MS_DEFAULT;
    this.controllerClient = this.newControllerClient(parseBootstrap(opts.bootstrap));
  }

  /** The controller client (admin calls go through it). */
  get controller(): ControllerCalls {
    return this.controllerClient;
  }

  cached(): ClusterMetadata | undefined {
    return this.view;
  }

  /** The cached view when fresh enough, else a new one. */
  async current(): Promise<ClusterMetadata> {
    if (this.view && Date.now() - this.fetchedAtMs < this.maxAgeMs) return this.view;
    return this.refresh();
  }

  /** A new view (coalesced with one already in flight). */
  refresh(): Promise<ClusterMetadata> {
    if (this.inFlight) return this.inFlight;
    this.inFlight = this.fetch().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  /** Marks the view stale so that the next current() refreshes, without waiting. */
  invalidate(): void {
    this.fetchedAtMs = 0;
  }

  topic(name: string): TopicInfo | undefined {
    return this.view?.topics.find((t) => t.name === name);
  }

  partition(topic: string, partition: number): PartitionInfo | undefined {
    return this.topic(topic)?.partitions.find((p) => p.partition === partition);
  }

  node(role: Role, nodeId: number): NodeInfo | undefined {
    return this.view?.nodes.find((n) => n.role === role && n.nodeId === nodeId);
  }

  aliveNodes(role: Role): NodeInfo[] {
    return (this.view?.nodes ?? []).filter((n) => n.role === role && n.alive);
  }

  /** Address of a partition's current leader, when known and alive. */
  leaderAddress(topic: string, partition: number): string | undefined {
    const p = this.partition(topic, partition);
    if (!p || p.leader < 0) return undefined;
    const t = this.topic(topic)!;
    const n = this.node(t.role, p.leader);
    return n && n.alive ? n.address : undefined;
  }

  close(): void {
    this.controllerClient.close();
  }

  private async fetch(): Promise<ClusterMetadata> {
    const sinceLastMs = Date.now() - this.fetchedAtMs;
    if (this.view && sinceLastMs < REFRESH_INTERVAL_MS_MIN)
      await sleep(REFRESH_INTERVAL_MS_MIN - sinceLastMs);
    const m = await this.controllerClient.metadata();
    if (this.view && BigInt(m.version) < BigInt(this.view.version)) {
      // A lagging controller answered: keep the newer view but note the refresh.
      this.fetchedAtMs = Date.now();
      return this.view;
    }
    this.view = m;
    this.fetchedAtMs = Date.now();
    if (!this.controllersKnown && m.controllers && m.controllers.length > 0) {
      // Swap the placeholder bootstrap ids for the quorum's real ids and addresses.
      this.controllersKnown = true;
      const old = this.controllerClient;
      this.controllerClient = this.newControllerClient(m.controllers);
      old.close();
    }
    return m;
  }

  private newControllerClient(controllers: ReturnType<typeof parseBootstrap>): ControllerCalls {
    if (controllers.length === 0) throw new TernError("INVALID_REQUEST", "no controller addresses");
    return this.opts.transport.controller({
      controllers,
      logger: this.opts.logger,
      requestTimeoutMs: CONTROLLER_REQUEST_TIMEOUT_MS,
      attemptsMax: CONTROLLER_ATTEMPTS_MAX,
      credentials: this.opts.credentials,
    });
  }
}

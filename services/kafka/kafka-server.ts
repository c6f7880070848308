// The Kafka protocol listener: accepts TCP (or TLS) connections, bounded in number, per client
// address, in idle time and TLS handshake time (connection-guard.ts), and
// dispatches each request to its API's handler. Framing, the SASL gate and answers in request
// order with a bounded number in flight are the connection's (kafka-connection.ts). A
// malformed frame, an unknown API or version closes that connection only (ApiVersions
// excepted: it answers UNSUPPORTED_VERSION with the table).
import type { SchedulingClock } from "../../libs/runtime/scheduler.js";
import { aclAuthorizer, clientHostOf, type Authorizer } from "../../libs/common/acl.js";
import { ANONYMOUS_PRINCIPAL, requestAccess } from "./kafka-access.js";
import { principalOfCertificate } from "../../libs/server/tls/principal.js";
import { createAclsResponse, deleteAclsResponse, describeAclsResponse } from "./acl-apis.js";
import { alterClientQuotasResponse, describeClientQuotasResponse } from "./quota-apis.js";
import { createServer, type Server, type Socket } from "node:net";
import { createServer as createTlsServer, TLSSocket, type Server as TlsServer } from "node:tls";
import type { TlsContext } from "../../libs/server/tls/credentials.js";
import { TernError } from "../../libs/common/errors.js";
import { addOffsetsToTxnResponse } from "./add-offsets-to-txn-api.js";
import { addPartitionsToTxnResponse } from "./add-partitions-to-txn-api.js";
import { API, apiVersionsResponse, SUPPORTED, supports } from "./api-versions.js";
import { defaultKafkaFeatureLevels } from "../../libs/common/kafka-features.js";
import { endTxnResponse } from "./end-txn-api.js";
import { fetchResponse, type ConnectionFetchSessions } from "./fetch-api.js";
import { FetchSessionCache, newSessionOwner } from "./fetch-sessions.js";
import {
  coordinatorFromHandler,
  coordinatorFromMetadata,
  coordinatorRefusal,
  findCoordinatorResponse,
} from "./find-coordinator-api.js";
import {
  kafkaBodyBytes,
  kafkaBodyHead,
  type KafkaBody,
  type KafkaReader,
} from "../../libs/records/kafka-codec.js";
import {
  KafkaConnection,
  type KafkaDispatch,
  type KafkaRequestHeader,
} from "./kafka-connection.js";
import type { KafkaDeps, TransactionCoordinatorCalls } from "./kafka-deps.js";
import { listOffsetsResponse } from "./list-offsets-api.js";
import { metadataAnswer, metadataResponse } from "./metadata-api.js";
import { decodeMetadataRequest } from "./metadata-codec.js";
import { autoCreateTopics } from "./auto-create-topics.js";
import { groupApiResponse, isGroupApi } from "./group-apis.js";
import { prepareProduce, produceThrottleTimeAt } from "./produce-api.js";
import { initProducerIdResponse } from "./init-producer-id-api.js";
import { txnOffsetCommitResponse } from "./txn-offset-commit-api.js";
import { createPartitionsResponse } from "./create-partitions-api.js";
import { writeTxnMarkersResponse } from "./write-txn-markers-api.js";
import {
  createTopicsResponse,
  deleteTopicsResponse,
  describeConfigsResponse,
} from "./topic-admin-api.js";
import {
  describeProducersResponse,
  describeTransactionsResponse,
  listTransactionsResponse,
} from "./transaction-admin-apis.js";
import { describeClusterResponse } from "./describe-cluster-api.js";
import { deleteRecordsResponse } from "./delete-records-api.js";
import { scramDecoy } from "../../libs/common/scram-decoy.js";
import {
  SASL_AUTH_TIMEOUT_MS,
  SASL_FAILURE_DELAY_MS_DEFAULT,
  type SaslMode,
} from "./sasl-authenticator.js";
import type { ScramCredential, ScramMechanism } from "../../libs/common/scram.js";
import { DecodeError } from "../../libs/common/decode-error.js";
import { ClientQuotaManager, type QuotaWindow } from "./quota-manager.js";
import { quotaMetrics } from "./quota-metrics.js";
import type { Registry } from "prom-client";
import type { KafkaConnectionSettings } from "../../libs/common/config.js";
import { ConnectionGuard, KAFKA_CONNECTION_SETTINGS_DEFAULT } from "./connection-guard.js";
import { InflationBudget } from "./inflation-budget.js";
import { DECOMPRESSED_BYTES_MAX } from "./record-batch.js";

export interface KafkaAuthorizerOptions {
  /** Principals (User:<name>) no ACL refuses: operators. */
  readonly superUsers: readonly string[];
}

/** Connections the listener holds at once (frame and in-flight bounds: kafka-connection.ts). */
export const CONNECTIONS_MAX = 1_000;

export class KafkaServer {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();

  private readonly stopTls: () => void = () => undefined;
  private readonly sasl: SaslMode;
  private readonly saslAuthTimeoutMs: number;
  private readonly saslFailureDelayMs: number;
  /** Client quotas of the cluster metadata, enforced per request (quota-manager.ts). */
  private readonly quotas: ClientQuotaManager;
  /** With --kafka-authorizer acl: the cluster metadata's ACLs decide (kafka-access.ts). */
  private readonly authorizer: Authorizer | undefined;
  /** Per-IP connection cap and idle close (connection-guard.ts). */
  private readonly guard: ConnectionGuard;
  /** Inflated Produce bytes held at once over every connection (each connection has its own, too). */
  private readonly inflation: InflationBudget;
  /** Fetch sessions (KIP-227) of every connection, bounded (fetch-sessions.ts). */
  private readonly fetchSessions: FetchSessionCache;
  private readonly clock: SchedulingClock;

  /**
   * With `tls`, the listener speaks TLS (Kafka's SSL listener) with the process's certificate,
   * reloaded on rotation. With `sasl: "required"` every connection authenticates with SCRAM
   * (sasl-authenticator.ts) against the credentials of the cluster metadata first.
   */
  constructor(
    private readonly deps: KafkaDeps,
    options: {
      tls?: TlsContext | undefined;
      sasl?: SaslMode | undefined;
      saslAuthTimeoutMs?: number;
      /** Wait before a failed SASL authentication is answered and closed (default 100 ms, Kafka's). */
      saslFailureDelayMs?: number;
      authorizer?: KafkaAuthorizerOptions | undefined;
      /** Client quotas' rate window (quota-manager.ts); Kafka's 11 × 1 s by default. */
      quotaWindow?: QuotaWindow | undefined;
      /** Per-IP cap, idle close, TLS handshake deadline, inflation budget (defaults: Kafka's and connection-guard.ts's). */
      connections?: KafkaConnectionSettings;
      /** Where the listener's counters are registered (the process's /metrics). */
      metrics?: Registry | undefined;
      /** Quota windows and connection timers (the process runtime's). */
      clock: SchedulingClock;
    },
  ) {
    this.clock = options.clock;
    this.quotas = new ClientQuotaManager({
      window: options.quotaWindow,
      metrics: quotaMetrics(options.metrics),
      now: () => options.clock.monotonicMs(),
    });
    const limits = options.connections ?? KAFKA_CONNECTION_SETTINGS_DEFAULT;
    this.guard = new ConnectionGuard(limits, deps.logger, options.clock, options.metrics);
    this.inflation = new InflationBudget(limits.inflationBytesMax);
    this.fetchSessions = new FetchSessionCache(limits.fetchSessionCacheSlots, () =>
      options.clock.monotonicMs(),
    );
    this.sasl = options.sasl ?? "off";
    const superUsers = new Set(options.authorizer?.superUsers ?? []);
    this.authorizer =
      options.authorizer === undefined
        ? undefined
        : aclAuthorizer(() => deps.metadata()?.acls ?? [], superUsers);
    this.saslAuthTimeoutMs = options.saslAuthTimeoutMs ?? SASL_AUTH_TIMEOUT_MS;
    this.saslFailureDelayMs = options.saslFailureDelayMs ?? SASL_FAILURE_DELAY_MS_DEFAULT;
    const tls = options.tls;
    if (tls === undefined) {
      this.server = createServer((socket) => {
        if (this.guard.admit(socket)) this.accept(socket);
      });
    } else {
      const { cert, key, ca } = tls.provider.current();
      // Client certificates of the cluster CA are asked for but optional (Kafka's
      // ssl.client.auth=requested): a verified one names the connection's principal.
      const server: TlsServer = createTlsServer(
        {
          cert,
          key,
          ca,
          requestCert: true,
          rejectUnauthorized: false,
          minVersion: "TLSv1.2",
          handshakeTimeout: limits.tlsHandshakeTimeoutMs,
        },
        (socket) => this.accept(socket),
      );
      // Counted per address before the handshake: a client that never finishes one holds a slot.
      server.on("connection", (raw: Socket) => this.guard.admit(raw));
      // Handshake failures (a plaintext client, an unknown CA, no handshake in time) end that connection only.
      // With a listener here Node leaves the socket open: it is destroyed here.
      server.on("tlsClientError", (e: NodeJS.ErrnoException, socket: TLSSocket) => {
        if (e.code === "ERR_TLS_HANDSHAKE_TIMEOUT") this.guard.count("tls_handshake");
        socket.destroy();
      });
      // The provider publishes the identity on every change of the files, a CA-only one
      // included (reloading-certificate-provider.ts), so the CA bundle is re-read here too.
      const onIdentity: import("@grpc/grpc-js").experimental.IdentityCertificateUpdateListener = (
        u,
      ) => {
        if (u)
          server.setSecureContext({
            cert: u.certificate,
            key: u.privateKey,
            ca: tls.provider.current().ca,
            minVersion: "TLSv1.2",
          });
      };
      tls.provider.addIdentityCertificateListener(onIdentity);
      this.stopTls = () => tls.provider.removeIdentityCertificateListener(onIdentity);
      this.server = server;
    }
    this.server.maxConnections = CONNECTIONS_MAX;
  }

  listen(host: string, port: number): Promise<{ host: string; port: number }> {
    return new Promise((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(port, host, () => {
        this.server.off("error", reject);
        const a = this.server.address();
        resolve(
          typeof a === "object" && a !== null ? { host: a.address, port: a.port } : { host, port },
        );
      });
    });
  }

  async close(): Promise<void> {
    this.stopTls();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(socket: Socket): void {
    this.sockets.add(socket);
    socket.on("close", () => this.sockets.delete(socket));
    socket.setNoDelay(true);
    this.guard.closeWhenIdle(socket);
    const log = this.deps.logger.child({
      kafkaPeer: `${socket.remoteAddress}:${socket.remotePort}`,
    });
    // Framing, the SASL gate and answer order are the connection's (kafka-connection.ts); it
    // lives as long as its socket's listeners. A throttled request mutes it (quota-manager.ts).
    let connection: KafkaConnection | undefined = undefined;
    const dispatch = this.withQuotas(this.dispatcher(socket), (ms) => connection?.mute(ms));
    connection = new KafkaConnection(socket, {
      log,
      dispatch,
      sasl: this.sasl,
      credential: (user, mechanism) => this.credential(user, mechanism),
      decoy: (user, mechanism) =>
        scramDecoy(this.deps.metadata()?.scramCredentials ?? [], user, mechanism),
      saslAuthTimeoutMs: this.saslAuthTimeoutMs,
      saslFailureDelayMs: this.saslFailureDelayMs,
      principal: certificatePrincipal(socket),
      clock: this.clock,
    });
  }

  /**
   * The dispatch with this connection's client quotas: usage is recorded as each answer is
   * ready, a throttle time goes into the answer's throttle_time_ms (Produce, Fetch) and mutes
   * the connection (Kafka since KIP-219: answer at once, then read nothing for that long).
   * Without quotas in the metadata this adds one property read per request.
   */
  private withQuotas(dispatch: KafkaDispatch, mute: (ms: number) => void): KafkaDispatch {
    const quotas = this.quotas.forConnection();
    return (header, reader, principal) => {
      const applied = quotas.lookup(
        this.deps.metadata()?.clientQuotas,
        principal,
        header.clientId ?? "",
      );
      if (applied === undefined || header.apiKey === API.ApiVersions)
        return dispatch(header, reader, principal);
      // Request time: the event loop's time decoding and starting the request here.
      const started = applied.request ? performance.now() : 0;
      const answer = dispatch(header, reader, principal);
      const requestMs = applied.request ? performance.now() - started : 0;
      const kind =
        header.apiKey === API.Produce ? "produce" : header.apiKey === API.Fetch ? "fetch" : "other";
      const requestBytes = reader.end;
      return answer.then((body) => {
        const bytes =
          kind === "produce" ? requestBytes : body === undefined ? 0 : kafkaBodyBytes(body);
        const throttleMs = quotas.throttle(applied, kind, bytes, requestMs);
        if (throttleMs > 0) {
          if (body !== undefined) writeThrottleTime(header, kafkaBodyHead(body), throttleMs);
          mute(throttleMs);
        }
        return body;
      });
    };
  }

  /** One connection's dispatch. Produce requests reach the Broker handler in arrival order (see prepareProduce). */
  private dispatcher(socket: Socket): KafkaDispatch {
    let produceOrder: Promise<unknown> = Promise.resolve();
    // This connection's fetch sessions, gone with it.
    const fetchSessions = { cache: this.fetchSessions, owner: newSessionOwner() };
    socket.once("close", () => this.fetchSessions.closeOwner(fetchSessions.owner));
    // This connection's inflation (one largest batch at a time), then the listener's.
    const inflation = [new InflationBudget(DECOMPRESSED_BYTES_MAX), this.inflation];
    // The deps with this connection's access, made again only when its principal changes (SASL).
    let withAccess: { principal: string; deps: KafkaDeps } | undefined;
    const depsFor = (principal: string): KafkaDeps => {
      if (this.authorizer === undefined) return this.deps;
      if (withAccess?.principal !== principal)
        withAccess = {
          principal,
          deps: {
            ...this.deps,
            access: requestAccess(this.authorizer, principal, clientHostOf(socket.remoteAddress)),
          },
        };
      return withAccess.deps;
    };
    return (header, reader, principal) => {
      const deps = depsFor(principal);
      if (header.apiKey === API.Produce) {
        const prepared = prepareProduce(deps, header.version, reader, inflation);
        // Handled where it is made: a request that fails to decode rejects while an earlier one
        // may still be inflating, before `sent` below listens (the rejection still reaches it).
        prepared.catch(() => undefined);
        const sent = produceOrder.then(() => prepared).then((p) => ({ answer: p.send() }));
        produceOrder = sent.catch(() => undefined);
        return sent.then((s) => s.answer);
      }
      if (isGroupApi(header.apiKey)) {
        return groupApiResponse(deps, header.apiKey, header.version, reader, {
          clientId: header.clientId ?? "",
          clientHost: `/${socket.remoteAddress ?? ""}`,
        });
      }
      return this.handle(header, reader, deps, fetchSessions);
    };
  }

  /** Metadata that first creates the missing topics it names (auto-create-topics.ts). */
  private async autoCreatingMetadata(
    deps: KafkaDeps,
    version: number,
    r: KafkaReader,
  ): Promise<Buffer> {
    const request = decodeMetadataRequest(version, r);
    const refused = await autoCreateTopics(deps, this.clock, request);
    return metadataAnswer(deps, version, request, refused);
  }

  private async handle(
    h: KafkaRequestHeader,
    r: KafkaReader,
    deps: KafkaDeps,
    fetchSessions: ConnectionFetchSessions,
  ): Promise<KafkaBody | undefined> {
    switch (h.apiKey) {
      case API.ApiVersions:
        return apiVersionsResponse(
          h.version,
          supports(API.ApiVersions, h.version) ? r : undefined,
          SUPPORTED,
          {
            levels: deps.featureLevels ?? defaultKafkaFeatureLevels(),
            epoch: BigInt(deps.metadata()?.version ?? "0"),
          },
        );
      case API.Metadata:
        if (deps.autoCreateTopics !== true) return metadataResponse(deps, h.version, r);
        return this.autoCreatingMetadata(deps, h.version, r);
      case API.Fetch:
        return fetchResponse(deps, h.version, r, fetchSessions);
      case API.ListOffsets:
        return listOffsetsResponse(deps, h.version, r);
      case API.FindCoordinator: {
        const calls = deps.transactions;
        return findCoordinatorResponse(
          (keyType, key) =>
            coordinatorRefusal(deps.access, keyType, key) ??
            (calls === undefined
              ? coordinatorFromMetadata(deps.metadata(), keyType, key)
              : coordinatorFromHandler(calls, deps.metadata(), keyType, key)),
          h.version,
          r,
        );
      }
      case API.InitProducerId:
        return initProducerIdResponse(deps, h.version, r);
      case API.AddPartitionsToTxn:
        return addPartitionsToTxnResponse(
          this.transactions(),
          deps.logger,
          h.version,
          r,
          deps.access,
        );
      case API.AddOffsetsToTxn:
        return addOffsetsToTxnResponse(this.transactions(), deps.logger, h.version, r, deps.access);
      case API.EndTxn:
        return endTxnResponse(this.transactions(), deps.logger, h.version, r, deps.access);
      case API.TxnOffsetCommit:
        return txnOffsetCommitResponse(deps, h.version, r);
      case API.CreateTopics:
        return createTopicsResponse(deps, this.clock, h.version, r);
      case API.DeleteTopics:
        return deleteTopicsResponse(deps, h.version, r);
      case API.CreatePartitions:
        return createPartitionsResponse(deps, h.version, r);
      case API.DescribeConfigs:
        return describeConfigsResponse(deps, h.version, r);
      case API.DescribeCluster:
        return describeClusterResponse(deps, r);
      case API.ListTransactions:
        return listTransactionsResponse(
          deps.transactionAdmin ?? {},
          deps.logger,
          h.version,
          r,
          deps.access,
        );
      case API.DescribeTransactions:
        return describeTransactionsResponse(
          deps.transactionAdmin ?? {},
          deps.logger,
          r,
          deps.access,
        );
      case API.DescribeProducers:
        return describeProducersResponse(deps.transactionAdmin ?? {}, deps.logger, r, deps.access);
      case API.DeleteRecords:
        return deleteRecordsResponse(deps, h.version, r);
      case API.WriteTxnMarkers:
        return writeTxnMarkersResponse(
          deps.transactionAdmin?.abortPartitionTransaction,
          deps.logger,
          h.version,
          r,
          deps.access,
        );
      case API.CreateAcls:
        return createAclsResponse(deps, h.version, r);
      case API.DescribeAcls:
        return describeAclsResponse(deps, h.version, r);
      case API.DeleteAcls:
        return deleteAclsResponse(deps, h.version, r);
      case API.DescribeClientQuotas:
        return describeClientQuotasResponse(deps, h.version, r);
      case API.AlterClientQuotas:
        return alterClientQuotasResponse(deps, h.version, r);
      default:
        throw new DecodeError("kafka", `api key ${h.apiKey} has no handler`);
    }
  }

  /** A user's SCRAM credential from the cluster metadata (replicated by the controller). */
  private credential(user: string, mechanism: ScramMechanism): ScramCredential | undefined {
    return this.deps
      .metadata()
      ?.scramCredentials?.find((c) => c.user === user && c.mechanism === mechanism);
  }

  /** A coordinator's handlers; on a broker every call is NOT_COORDINATOR (the client finds it again). */
  private transactions(): TransactionCoordinatorCalls {
    return this.deps.transactions ?? NOT_A_TRANSACTION_COORDINATOR;
  }
}

const notCoordinator = async (): Promise<never> => {
  throw new TernError(
    "NOT_COORDINATOR",
    "this node is a broker: transactions are served by the coordinator FindCoordinator names",
  );
};
const NOT_A_TRANSACTION_COORDINATOR: TransactionCoordinatorCalls = {
  findCoordinator: notCoordinator,
  initProducerId: notCoordinator,
  addPartitionsToTxn: notCoordinator,
  addOffsetsToTxn: notCoordinator,
  endTxn: notCoordinator,
};

/** Sets throttle_time_ms in an answer that has it where this listener writes it (Produce v1+ after the topics, Fetch v1+ first). */
function writeThrottleTime(h: KafkaRequestHeader, body: Buffer, ms: number): void {
  const value = Math.min(ms, 0x7fffffff);
  const produceAt = h.apiKey === API.Produce ? produceThrottleTimeAt(body) : undefined;
  if (produceAt !== undefined) body.writeInt32BE(value, produceAt);
  else if (h.apiKey === API.Fetch && h.version >= 1 && body.byteLength >= 4)
    body.writeInt32BE(value, 0);
}

/**
 * The principal of a TLS connection whose client certificate chains to the cluster CA:
 * User:<CN> (Kafka's ssl.principal.mapping.rules extracting the CN); User:ANONYMOUS otherwise.
 * A SASL login on the same connection replaces it (SASL_SSL names the SASL user, as in Kafka).
 */
function certificatePrincipal(socket: Socket): string {
  if (!(socket instanceof TLSSocket) || !socket.authorized) return ANONYMOUS_PRINCIPAL;
  const p = principalOfCertificate(socket.getPeerCertificate());
  return p.kind === "anonymous" || p.name === "" ? ANONYMOUS_PRINCIPAL : `User:${p.name}`;
}

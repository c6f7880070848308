// The Kafka protocol listener: TCP, size-prefixed frames, request header v1 (v2 for flexible
// requests), answers in request order per connection (Kafka's rule) while requests run
// concurrently. Bounded everywhere: frame size, requests in flight per connection (reading
// pauses at the bound), connections. A malformed frame, an unknown API or version closes that
// connection only (ApiVersions excepted: it answers UNSUPPORTED_VERSION with the table).
import { createServer, type Server, type Socket } from "node:net";
import { createServer as createTlsServer, type Server as TlsServer } from "node:tls";
import type { TlsContext } from "../../libs/server/tls/credentials.js";
import { TernError } from "../../libs/common/errors.js";
import { addOffsetsToTxnResponse } from "./add-offsets-to-txn-api.js";
import { addPartitionsToTxnResponse } from "./add-partitions-to-txn-api.js";
import { API, apiVersionsResponse, flexibleRequest, supports } from "./api-versions.js";
import { endTxnResponse } from "./end-txn-api.js";
import { fetchResponse } from "./fetch-api.js";
import { coordinatorFromHandler, coordinatorFromMetadata, findCoordinatorResponse } from "./find-coordinator-api.js";
import { KafkaDecodeError, KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import type { KafkaDeps, TransactionCoordinatorCalls } from "./kafka-deps.js";
import { listOffsetsResponse } from "./list-offsets-api.js";
import { metadataResponse } from "./metadata-api.js";
import { groupApiResponse, isGroupApi } from "./group-apis.js";
import { prepareProduce } from "./produce-api.js";
import { initProducerIdResponse } from "./init-producer-id-api.js";
import { txnOffsetCommitResponse } from "./txn-offset-commit-api.js";
import { createTopicsResponse, deleteTopicsResponse, describeConfigsResponse } from "./topic-admin-api.js";
import { describeProducersResponse, describeTransactionsResponse, listTransactionsResponse } from "./transaction-admin-apis.js";
import { describeClusterResponse } from "./describe-cluster-api.js";
import { deleteRecordsResponse } from "./delete-records-api.js";
import { SASL_AUTH_TIMEOUT_MS, SASL_UNAUTHENTICATED_FRAME_BYTES_MAX, SaslAuthenticator, type SaslMode } from "./sasl-authenticator.js";
import type { ScramCredential, ScramMechanism } from "../../libs/common/scram.js";

/** Largest request frame accepted (Kafka's socket.request.max.bytes default is 100 MiB). */
export const FRAME_BYTES_MAX = 100 * 1024 * 1024;
/** Requests one connection may have in flight before reading pauses. */
export const INFLIGHT_PER_CONNECTION_MAX = 64;
export const CONNECTIONS_MAX = 1_000;

interface RequestHeader {
  readonly apiKey: number;
  readonly version: number;
  readonly correlationId: number;
  readonly clientId: string | null;
}

export class KafkaServer {
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();

  private readonly stopTls: () => void = () => undefined;
  private readonly sasl: SaslMode;
  private readonly saslAuthTimeoutMs: number;

  /**
   * With `tls`, the listener speaks TLS (Kafka's SSL listener) with the process's certificate,
   * reloaded on rotation. With `sasl: "required"` every connection authenticates with SCRAM
   * (sasl-authenticator.ts) against the credentials of the cluster metadata first.
   */
  constructor(private readonly deps: KafkaDeps, options: { tls?: TlsContext | undefined; sasl?: SaslMode | undefined; saslAuthTimeoutMs?: number } = {}) {
    this.sasl = options.sasl ?? "off";
    this.saslAuthTimeoutMs = options.saslAuthTimeoutMs ?? SASL_AUTH_TIMEOUT_MS;
    const tls = options.tls;
    if (tls === undefined) {
      this.server = createServer((socket) => this.accept(socket));
    } else {
      const { cert, key } = tls.provider.current();
      const server: TlsServer = createTlsServer({ cert, key, minVersion: "TLSv1.2" }, (socket) => this.accept(socket));
      // Handshake failures (a plaintext client, an unknown CA) end that connection only.
      server.on("tlsClientError", () => undefined);
      const onIdentity: import("@grpc/grpc-js").experimental.IdentityCertificateUpdateListener = (u) => {
        if (u) server.setSecureContext({ cert: u.certificate, key: u.privateKey, minVersion: "TLSv1.2" });
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
        resolve(typeof a === "object" && a !== null ? { host: a.address, port: a.port } : { host, port });
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
    socket.setNoDelay(true);
    const log = this.deps.logger.child({ kafkaPeer: `${socket.remoteAddress}:${socket.remotePort}` });
    let pending: Buffer = Buffer.alloc(0);
    // Answers leave in request order: each request's promise is chained behind the previous one.
    let tail: Promise<void> = Promise.resolve();
    let inFlight = 0;
    let closed = false;
    // Produce requests reach the Broker handler in arrival order (see prepareProduce).
    let produceOrder: Promise<unknown> = Promise.resolve();
    const close = (why: string, err?: unknown): void => {
      if (closed) return;
      closed = true;
      log.warn({ err, why }, "kafka connection closed");
      socket.destroy();
    };
    const sasl = new SaslAuthenticator(this.sasl, (user, mechanism) => this.credential(user, mechanism));
    // Bounded time to authenticate: an idle unauthenticated connection holds a slot for 10 s at most.
    const authTimer = sasl.authenticated() ? undefined : setTimeout(() => {
      if (!sasl.authenticated()) close(`no SASL authentication within ${this.saslAuthTimeoutMs} ms`);
    }, this.saslAuthTimeoutMs);
    authTimer?.unref();
    socket.on("close", () => {
      closed = true;
      if (authTimer !== undefined) clearTimeout(authTimer);
      this.sockets.delete(socket);
    });
    socket.on("error", () => undefined);
    // Set once a failed SASL exchange was answered: nothing more is read from this connection.
    let refusing = false;
    socket.on("data", (chunk: Buffer) => {
      if (refusing) return;
      pending = pending.byteLength === 0 ? chunk : Buffer.concat([pending, chunk]);
      while (pending.byteLength >= 4) {
        const size = pending.readInt32BE(0);
        const sizeMax = sasl.authenticated() ? FRAME_BYTES_MAX : SASL_UNAUTHENTICATED_FRAME_BYTES_MAX;
        if (size < 8 || size > sizeMax) return close(`request frame of ${size} bytes (accepted: 8..${sizeMax}${sasl.authenticated() ? "" : " before SASL authentication"})`);
        if (pending.byteLength < 4 + size) break;
        const frame = pending.subarray(4, 4 + size);
        pending = pending.subarray(4 + size);
        if (sasl.expectsRawToken()) {
          // SaslHandshake v0: SCRAM messages come as raw size-prefixed tokens (no request header).
          const { response } = sasl.rawToken(Buffer.from(frame));
          tail = tail.then(() => {
            if (closed) return;
            if (response === undefined) return close("SASL authentication failed (raw token exchange)");
            const size = Buffer.alloc(4);
            size.writeInt32BE(response.byteLength);
            socket.write(Buffer.concat([size, response]));
          });
          if (response === undefined) {
            refusing = true;
            return;
          }
          continue;
        }
        let header: RequestHeader;
        let reader: KafkaReader;
        try {
          ({ header, reader } = readHeader(frame));
        } catch (e) {
          return close("malformed request header", e);
        }
        if (!supports(header.apiKey, header.version) && header.apiKey !== API.ApiVersions) {
          return close(`api key ${header.apiKey} version ${header.version} is not supported (see ApiVersions)`);
        }
        if (!sasl.authenticated() && header.apiKey !== API.ApiVersions && header.apiKey !== API.SaslHandshake && header.apiKey !== API.SaslAuthenticate) {
          // Kafka's SaslServerAuthenticator: any other request before authentication closes the connection.
          return close(`${apiName(header.apiKey)} before SASL authentication`);
        }
        inFlight++;
        if (inFlight >= INFLIGHT_PER_CONNECTION_MAX) socket.pause();
        let handled: Promise<Buffer | undefined>;
        let closeAfter = false;
        if (header.apiKey === API.SaslHandshake || header.apiKey === API.SaslAuthenticate) {
          // Synchronous, in arrival order: the gate above sees each step's outcome.
          try {
            const wasAuthenticated = sasl.authenticated();
            const a = header.apiKey === API.SaslHandshake ? sasl.handshake(header.version, reader) : sasl.authenticate(header.version, reader);
            closeAfter = a.close;
            if (!wasAuthenticated && sasl.authenticated()) log.info({ principal: sasl.principal }, "kafka connection authenticated (SASL/SCRAM)");
            if (a.close) log.warn({ api: apiName(header.apiKey), reason: sasl.failure }, "kafka SASL authentication failed");
            handled = Promise.resolve(a.body);
          } catch (e) {
            handled = Promise.reject(e);
          }
        } else if (header.apiKey === API.Produce) {
          const prepared = prepareProduce(this.deps, header.version, reader);
          const sent = produceOrder.then(() => prepared).then((p) => ({ answer: p.send() }));
          produceOrder = sent.catch(() => undefined);
          handled = sent.then((s) => s.answer);
        } else if (isGroupApi(header.apiKey)) {
          handled = groupApiResponse(this.deps, header.apiKey, header.version, reader, { clientId: header.clientId ?? "", clientHost: `/${socket.remoteAddress ?? ""}` });
        } else handled = this.handle(header, reader);
        const answer = handled.then(
          (body) => ({ body }),
          (err: unknown) => ({ err }),
        );
        tail = tail.then(async () => {
          const outcome = await answer;
          inFlight--;
          if (inFlight < INFLIGHT_PER_CONNECTION_MAX && socket.isPaused()) socket.resume();
          if (closed) return;
          if ("err" in outcome) return close(`${apiName(header.apiKey)} v${header.version} failed`, outcome.err);
          if (outcome.body !== undefined) socket.write(frameResponse(header, outcome.body));
          if (closeAfter) {
            // The answer goes out first (end() flushes), then the connection is gone.
            closed = true;
            socket.end();
            setTimeout(() => socket.destroy(), 1_000).unref();
          }
        });
        if (closeAfter) {
          refusing = true;
          return;
        }
      }
    });
  }

  private async handle(h: RequestHeader, r: KafkaReader): Promise<Buffer | undefined> {
    switch (h.apiKey) {
      case API.ApiVersions:
        return apiVersionsResponse(h.version, supports(API.ApiVersions, h.version) ? r : undefined);
      case API.Metadata:
        return metadataResponse(this.deps, h.version, r);
      case API.Fetch:
        return fetchResponse(this.deps, h.version, r);
      case API.ListOffsets:
        return listOffsetsResponse(this.deps, h.version, r);
      case API.FindCoordinator: {
        const calls = this.deps.transactions;
        return findCoordinatorResponse((keyType, key) => (calls === undefined ? coordinatorFromMetadata(this.deps.metadata(), keyType, key) : coordinatorFromHandler(calls, this.deps.metadata(), keyType, key)), h.version, r);
      }
      case API.InitProducerId:
        return initProducerIdResponse(this.deps, h.version, r);
      case API.AddPartitionsToTxn:
        return addPartitionsToTxnResponse(this.transactions(), this.deps.logger, h.version, r);
      case API.AddOffsetsToTxn:
        return addOffsetsToTxnResponse(this.transactions(), this.deps.logger, h.version, r);
      case API.EndTxn:
        return endTxnResponse(this.transactions(), this.deps.logger, h.version, r);
      case API.TxnOffsetCommit:
        return txnOffsetCommitResponse(this.deps, h.version, r);
      case API.CreateTopics:
        return createTopicsResponse(this.deps, h.version, r);
      case API.DeleteTopics:
        return deleteTopicsResponse(this.deps, h.version, r);
      case API.DescribeConfigs:
        return describeConfigsResponse(this.deps, h.version, r);
      case API.DescribeCluster:
        return describeClusterResponse(this.deps, r);
      case API.ListTransactions:
        return listTransactionsResponse(this.deps.transactionAdmin ?? {}, this.deps.logger, h.version, r);
      case API.DescribeTransactions:
        return describeTransactionsResponse(this.deps.transactionAdmin ?? {}, this.deps.logger, r);
      case API.DescribeProducers:
        return describeProducersResponse(this.deps.transactionAdmin ?? {}, this.deps.logger, r);
      case API.DeleteRecords:
        return deleteRecordsResponse(this.deps, h.version, r);
      default:
        throw new KafkaDecodeError(`api key ${h.apiKey} has no handler`);
    }
  }

  /** A user's SCRAM credential from the cluster metadata (replicated by the controller). */
  private credential(user: string, mechanism: ScramMechanism): ScramCredential | undefined {
    return this.deps.metadata()?.scramCredentials?.find((c) => c.user === user && c.mechanism === mechanism);
  }

  /** A coordinator's handlers; on a broker every call is NOT_COORDINATOR (the client finds it again). */
  private transactions(): TransactionCoordinatorCalls {
    return this.deps.transactions ?? NOT_A_TRANSACTION_COORDINATOR;
  }
}

const notCoordinator = async (): Promise<never> => {
  throw new TernError("NOT_COORDINATOR", "this node is a broker: transactions are served by the coordinator FindCoordinator names");
};
const NOT_A_TRANSACTION_COORDINATOR: TransactionCoordinatorCalls = {
  findCoordinator: notCoordinator, initProducerId: notCoordinator, addPartitionsToTxn: notCoordinator, addOffsetsToTxn: notCoordinator, endTxn: notCoordinator,
};

function readHeader(frame: Buffer): { header: RequestHeader; reader: KafkaReader } {
  const r = new KafkaReader(frame);
  const apiKey = r.int16();
  const version = r.int16();
  const correlationId = r.int32();
  const clientId = r.nullableString();
  if (flexibleRequest(apiKey, version)) r.taggedFields();
  return { header: { apiKey, version, correlationId, clientId }, reader: r };
}

/**
 * Size, correlation id, then the body. A flexible request's answer has response header v1 (an
 * empty tagged-field section after the correlation id), except ApiVersions, always header v0.
 */
function frameResponse(h: RequestHeader, body: Buffer): Buffer {
  const headerV1 = flexibleRequest(h.apiKey, h.version) && h.apiKey !== API.ApiVersions;
  const w = new KafkaWriter(9);
  w.int32(4 + (headerV1 ? 1 : 0) + body.byteLength).int32(h.correlationId);
  if (headerV1) w.noTaggedFields();
  return Buffer.concat([w.finish(), body]);
}

function apiName(key: number): string {
  for (const [name, k] of Object.entries(API)) if (k === key) return name;
  return `api ${key}`;
}

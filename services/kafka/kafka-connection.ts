// One Kafka client connection of the listener: size-prefixed request frames (bounded, tighter
// before SASL authentication; assembled by frame-assembler.ts), request header v1 (v2 for
// flexible requests), the SASL gate (only ApiVersions and the SASL APIs before authentication; a
// bounded time to authenticate), and answers in request order (Kafka's rule) while requests run
// concurrently. Memory per connection is bounded: reading pauses while the requests in flight
// reach their count or byte bound, or while the answers queued on the socket pass their bound
// (a client that does not read its answers stops being read; 'drain' resumes it). What a request
// means is the dispatch's job (kafka-server.ts); a malformed frame, an unknown API or version,
// or a failed request closes this connection only (ApiVersions excepted: every version reaches
// the dispatch).
import type { SchedulingClock, TimerHandle } from "../../libs/runtime/scheduler.js";
import { haltOnAssertion } from "../../libs/common/assert.js";
import { ANONYMOUS_PRINCIPAL } from "./kafka-access.js";
import type { Socket } from "node:net";
import type { Logger } from "pino";
import {
  KafkaReader,
  KafkaWriter,
  kafkaBodyBytes,
  type KafkaBody,
} from "../../libs/records/kafka-codec.js";
import { API, flexibleRequest, supports } from "./api-versions.js";
import { FrameAssembler } from "./frame-assembler.js";
import {
  SASL_UNAUTHENTICATED_FRAME_BYTES_MAX,
  SaslAuthenticator,
  type CredentialLookup,
  type SaslMode,
} from "./sasl-authenticator.js";
import type { DecoyLookup } from "../../libs/common/scram-decoy.js";

/** Largest request frame accepted (Kafka's socket.request.max.bytes default is 100 MiB). */
export const FRAME_BYTES_MAX = 100 * 1024 * 1024;
/** Smallest request frame: api key, version and correlation id. */
const FRAME_BYTES_MIN = 8;
/** Requests one connection may have in flight before reading pauses. */
export const INFLIGHT_PER_CONNECTION_MAX = 64;
/**
 * Request bytes one connection may have in flight before reading pauses: a request is started
 * while fewer are, so at most this plus one request (a single request up to FRAME_BYTES_MAX
 * always runs, alone).
 */
export const INFLIGHT_BYTES_PER_CONNECTION_MAX = 16 * 1024 * 1024;
/** Answer bytes queued on the socket past which no request is read or started until 'drain'. */
export const QUEUED_ANSWER_BYTES_MAX = 1024 * 1024;

export interface KafkaRequestHeader {
  readonly apiKey: number;
  readonly version: number;
  readonly correlationId: number;
  readonly clientId: string | null;
}

/** Answers one request: the response body, or undefined for none (Produce with acks=0). */
export type KafkaDispatch = (
  header: KafkaRequestHeader,
  reader: KafkaReader,
  principal: string,
) => Promise<KafkaBody | undefined>;

export interface KafkaConnectionOptions {
  readonly log: Logger;
  readonly dispatch: KafkaDispatch;
  readonly sasl: SaslMode;
  readonly credential: CredentialLookup;
  /** An unknown user's salt and iterations (scram-decoy.ts). */
  readonly decoy?: DecoyLookup;
  /** Time from accept to a completed SASL authentication (only with `sasl: "required"`). */
  readonly saslAuthTimeoutMs: number;
  /**
   * A failed authentication is answered, and the connection closed, this long after it
   * failed (Kafka's connection.failed.authentication.delay.ms): one connection cannot try
   * passwords faster, and the timing does not tell why it failed.
   */
  readonly saslFailureDelayMs?: number;
  /** Who the connection is before any SASL login: a verified client certificate's User:<CN>, or User:ANONYMOUS. */
  readonly principal?: string;
  /** The mute, authentication and close timers (the process runtime's). */
  readonly clock: SchedulingClock;
}

export class KafkaConnection {
  private readonly frames: FrameAssembler;
  // Answers leave in request order: each request's promise is chained behind the previous one.
  private tail: Promise<void> = Promise.resolve();
  private inFlight = 0;
  private inFlightBytes = 0;
  private closed = false;
  // Set once a failed SASL exchange was answered: nothing more is read from this connection.
  private refusing = false;
  private readonly sasl: SaslAuthenticator;
  private readonly log: Logger;
  private readonly dispatch: KafkaDispatch;
  private readonly principal: string;
  private readonly saslFailureDelayMs: number;
  // Set while the connection is throttled (a client quota, KIP-219): nothing is read until the timer.
  private muteTimer: TimerHandle | undefined;
  private readonly clock: SchedulingClock;
  private mutedUntil = 0;

  constructor(
    private readonly socket: Socket,
    options: KafkaConnectionOptions,
  ) {
    this.log = options.log;
    this.principal = options.principal ?? ANONYMOUS_PRINCIPAL;
    this.dispatch = options.dispatch;
    this.clock = options.clock;
    this.saslFailureDelayMs = options.saslFailureDelayMs ?? 0;
    this.sasl = new SaslAuthenticator(options.sasl, options.credential, options.decoy);
    this.frames = new FrameAssembler(
      () => (this.sasl.authenticated() ? FRAME_BYTES_MAX : SASL_UNAUTHENTICATED_FRAME_BYTES_MAX),
      FRAME_BYTES_MIN,
    );
    // Bounded time to authenticate: an idle unauthenticated connection holds a slot for that long at most.
    const authTimer = this.sasl.authenticated()
      ? undefined
      : this.clock.setTimeout(() => {
          if (!this.sasl.authenticated())
            this.close(`no SASL authentication within ${options.saslAuthTimeoutMs} ms`);
        }, options.saslAuthTimeoutMs);
    socket.on("close", () => {
      this.closed = true;
      this.clock.clearTimeout(authTimer);
      this.clock.clearTimeout(this.muteTimer);
    });
    socket.on("error", () => undefined);
    socket.on("data", (chunk: Buffer) => this.onData(chunk));
    socket.on("drain", () => this.pump());
  }

  private close(why: string, err?: unknown): void {
    if (this.closed) return;
    this.closed = true;
    this.log.warn({ err, why }, "kafka connection closed");
    this.socket.destroy();
  }

  private onData(chunk: Buffer): void {
    if (this.refusing) return;
    this.frames.push(chunk);
    this.pump();
  }

  /** Starts the whole frames received while the bounds allow; reads only while they do. */
  private pump(): void {
    while (!this.refusing && !this.closed && !this.overBounds()) {
      let frame: Buffer | undefined;
      try {
        frame = this.frames.next();
      } catch (e) {
        return this.close(
          `request ${(e as Error).message}${this.sasl.authenticated() ? "" : " before SASL authentication"}`,
        );
      }
      if (frame === undefined) break;
      let more: boolean;
      try {
        more = this.onFrame(frame);
      } catch (e) {
        // A request that throws while being started ends its connection, not the process.
        return this.close("a request failed as it started", e);
      }
      if (!more) return;
    }
    if (this.closed || this.refusing) return;
    if (this.overBounds()) this.socket.pause();
    else if (this.socket.isPaused()) this.socket.resume();
  }

  /**
   * Throttles the connection (Kafka's muted channel, KIP-219): no request is read or started
   * for `ms`; answers of requests already started still go out. A longer mute replaces a
   * shorter one.
   */
  mute(ms: number): void {
    if (this.closed || ms <= 0) return;
    const until = this.clock.monotonicMs() + ms;
    if (this.muteTimer !== undefined) {
      if (until <= this.mutedUntil) return;
      this.clock.clearTimeout(this.muteTimer);
    }
    this.mutedUntil = until;
    this.socket.pause();
    this.muteTimer = this.clock.setTimeout(() => {
      this.muteTimer = undefined;
      this.pump();
    }, ms);
  }

  /** Whether no further request may start now: muted, too many in flight, or answers not read. */
  private overBounds(): boolean {
    return (
      this.muteTimer !== undefined ||
      this.inFlight >= INFLIGHT_PER_CONNECTION_MAX ||
      this.inFlightBytes >= INFLIGHT_BYTES_PER_CONNECTION_MAX ||
      this.socket.writableLength > QUEUED_ANSWER_BYTES_MAX
    );
  }

  /** One request frame; false once nothing more is read from this connection. */
  private onFrame(frame: Buffer): boolean {
    if (this.sasl.expectsRawToken()) return this.onRawToken(frame);
    let header: KafkaRequestHeader;
    let reader: KafkaReader;
    try {
      ({ header, reader } = readHeader(frame));
    } catch (e) {
      this.close("malformed request header", e);
      return false;
    }
    if (!supports(header.apiKey, header.version) && header.apiKey !== API.ApiVersions) {
      this.close(
        `api key ${header.apiKey} version ${header.version} is not supported (see ApiVersions)`,
      );
      return false;
    }
    if (
      !this.sasl.authenticated() &&
      header.apiKey !== API.ApiVersions &&
      header.apiKey !== API.SaslHandshake &&
      header.apiKey !== API.SaslAuthenticate
    ) {
      // Kafka's SaslServerAuthenticator: every other request before authentication closes the connection.
      this.close(`${apiName(header.apiKey)} before SASL authentication`);
      return false;
    }
    this.inFlight++;
    this.inFlightBytes += frame.byteLength;
    const isSasl = header.apiKey === API.SaslHandshake || header.apiKey === API.SaslAuthenticate;
    const { handled, closeAfter } = isSasl
      ? this.saslStep(header, reader)
      : { handled: this.dispatched(header, reader), closeAfter: false };
    this.answerInOrder(header, frame.byteLength, handled, closeAfter);
    if (closeAfter) {
      this.refusing = true;
      return false;
    }
    return true;
  }

  /** The dispatch's answer; a dispatch that throws at once fails like one that rejects. */
  private dispatched(
    header: KafkaRequestHeader,
    reader: KafkaReader,
  ): Promise<KafkaBody | undefined> {
    try {
      return this.dispatch(header, reader, this.sasl.principal ?? this.principal);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /** SaslHandshake or SaslAuthenticate, synchronous and in arrival order: the gate sees each step's outcome. */
  private saslStep(
    header: KafkaRequestHeader,
    reader: KafkaReader,
  ): { handled: Promise<Buffer | undefined>; closeAfter: boolean } {
    try {
      const wasAuthenticated = this.sasl.authenticated();
      const a =
        header.apiKey === API.SaslHandshake
          ? this.sasl.handshake(header.version, reader)
          : this.sasl.authenticate(header.version, reader);
      if (!wasAuthenticated && this.sasl.authenticated())
        this.log.info(
          { principal: this.sasl.principal },
          "kafka connection authenticated (SASL/SCRAM)",
        );
      if (a.close)
        this.log.warn(
          { api: apiName(header.apiKey), reason: this.sasl.failure },
          "kafka SASL authentication failed",
        );
      return {
        handled: a.close ? this.afterFailureDelay(a.body) : Promise.resolve(a.body),
        closeAfter: a.close,
      };
    } catch (e) {
      return { handled: Promise.reject(e), closeAfter: false };
    }
  }

  /** Resolves with the answer once the failed-authentication delay has passed. */
  private afterFailureDelay<T>(value: T): Promise<T> {
    if (this.saslFailureDelayMs <= 0) return Promise.resolve(value);
    return new Promise((resolve) =>
      this.clock.setTimeout(() => resolve(value), this.saslFailureDelayMs),
    );
  }

  /** SaslHandshake v0: SCRAM messages come as raw size-prefixed tokens (no request header). */
  private onRawToken(frame: Buffer): boolean {
    const { response } = this.sasl.rawToken(Buffer.from(frame));
    const delayed = response === undefined ? this.afterFailureDelay(undefined) : undefined;
    this.tail = this.tail
      .then(async () => {
        await delayed;
        if (this.closed) return;
        if (response === undefined)
          return this.close("SASL authentication failed (raw token exchange)");
        const size = Buffer.alloc(4);
        size.writeInt32BE(response.byteLength);
        this.socket.write(Buffer.concat([size, response]));
        this.pump();
      })
      .catch((e: unknown) => this.close("answering a SASL token failed", e));
    if (response === undefined) {
      this.refusing = true;
      return false;
    }
    return true;
  }

  /** The answer goes out after every earlier one; a failed request closes the connection instead. */
  private answerInOrder(
    header: KafkaRequestHeader,
    requestBytes: number,
    handled: Promise<KafkaBody | undefined>,
    closeAfter: boolean,
  ): void {
    const answer = handled.then(
      (body) => ({ body }),
      (err: unknown) => ({ err }),
    );
    this.tail = this.tail
      .then(async () => {
        const outcome = await answer;
        this.inFlight--;
        this.inFlightBytes -= requestBytes;
        if (this.closed) return;
        if ("err" in outcome)
          return this.close(`${apiName(header.apiKey)} v${header.version} failed`, outcome.err);
        if (outcome.body !== undefined) {
          // The frame's head and the body's pieces as the writes of one writev: a Fetch answer
          // of megabytes is not copied to put 8 bytes in front of it, nor its stored batches
          // into one buffer first.
          const body = outcome.body;
          this.socket.cork();
          this.socket.write(frameHead(header, kafkaBodyBytes(body)));
          if (Buffer.isBuffer(body)) this.socket.write(body);
          else for (const piece of body) this.socket.write(piece);
          this.socket.uncork();
        }
        if (closeAfter) {
          // The answer goes out first (end() flushes), then the connection is gone.
          this.closed = true;
          this.socket.end();
          this.clock.setTimeout(() => this.socket.destroy(), 1_000);
          return;
        }
        this.pump();
      })
      // A fault in answering (a bug, not a request's failure) ends this connection, not the
      // process; a broken invariant (AssertionError) stops the process, unanswered.
      .catch((e: unknown) => {
        if (haltOnAssertion(e)) return;
        this.close("answering a request failed", e);
      });
  }
}

function readHeader(frame: Buffer): { header: KafkaRequestHeader; reader: KafkaReader } {
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
/** An answer frame's size and response header, for a body of bodyBytes. */
function frameHead(h: KafkaRequestHeader, bodyBytes: number): Buffer {
  const headerV1 = flexibleRequest(h.apiKey, h.version) && h.apiKey !== API.ApiVersions;
  const w = new KafkaWriter(9);
  w.int32(4 + (headerV1 ? 1 : 0) + bodyBytes).int32(h.correlationId);
  if (headerV1) w.noTaggedFields();
  return w.finish();
}

function apiName(key: number): string {
  for (const [name, k] of Object.entries(API)) if (k === key) return name;
  return `api ${key}`;
}

// One Kafka connection's SASL state (Kafka's SaslServerAuthenticator) and the two SASL APIs:
// SaslHandshake (17, v0-1) picks the mechanism; SaslAuthenticate (36, v0-1) carries the SCRAM
// messages. After a v0 handshake the SCRAM messages come as raw size-prefixed tokens instead
// (Kafka's pre-KIP-152 framing). With SASL required, a connection may send only ApiVersions and
// the SASL APIs until it has authenticated; anything else closes it, as Kafka does. A failed
// exchange answers SASL_AUTHENTICATION_FAILED and the connection is closed after the answer.
// On a listener without SASL both APIs answer ILLEGAL_SASL_STATE (Kafka's answer there).
import { KafkaReader, KafkaWriter } from "../../libs/records/kafka-codec.js";
import { fieldReader, fieldWriter } from "./versioned-fields.js";

/** SaslAuthenticate's first flexible version. */
export const SASL_AUTHENTICATE_FLEXIBLE_SINCE = 2;
import { errorSpec } from "../../libs/common/errors.js";
import {
  isScramMechanism,
  type ScramCredential,
  type ScramMechanism,
} from "../../libs/common/scram.js";
import type { DecoyLookup } from "../../libs/common/scram-decoy.js";
import { ScramServerExchange } from "./scram-server.js";

export type SaslMode = "required" | "off";
export const SASL_MECHANISMS_ENABLED: readonly ScramMechanism[] = [
  "SCRAM-SHA-512",
  "SCRAM-SHA-256",
];
/** Time a connection has from accept to a completed authentication. */
export const SASL_AUTH_TIMEOUT_MS = 10_000;
/** Kafka's connection.failed.authentication.delay.ms: a failed authentication is answered this much later. */
export const SASL_FAILURE_DELAY_MS_DEFAULT = 100;
/** Frames accepted before authentication (ApiVersions and SCRAM messages are tiny). */
export const SASL_UNAUTHENTICATED_FRAME_BYTES_MAX = 64 * 1024;

export type CredentialLookup = (
  user: string,
  mechanism: ScramMechanism,
) => ScramCredential | undefined;

/** What the connection does after an answer. */
export interface SaslAnswer {
  readonly body: Buffer;
  readonly close: boolean;
}

const code = (
  name: "NONE" | "ILLEGAL_SASL_STATE" | "UNSUPPORTED_SASL_MECHANISM" | "SASL_AUTHENTICATION_FAILED",
): number => errorSpec(name).code;

export class SaslAuthenticator {
  private phase: "start" | "handshaken" | "authenticated" | "failed" = "start";
  private exchange: ScramServerExchange | undefined;
  private mechanism: ScramMechanism | undefined;
  private handshakeVersion = 1;
  /** Why the exchange failed, for the server's log only (the client gets Kafka's generic message). */
  failure: string | undefined;
  /** Kafka's principal, `User:<name>`, once authenticated (what ACLs name: kafka-access.ts). */
  principal: string | undefined;

  constructor(
    private readonly mode: SaslMode,
    private readonly lookup: CredentialLookup,
    private readonly decoy?: DecoyLookup,
  ) {}

  /** True once the connection may send any request (always with SASL off). */
  authenticated(): boolean {
    return this.mode === "off" || this.phase === "authenticated";
  }

  /** After a v0 handshake the next frames are raw SCRAM tokens, not Kafka requests. */
  expectsRawToken(): boolean {
    return this.mode === "required" && this.phase === "handshaken" && this.handshakeVersion === 0;
  }

  handshake(version: number, r: KafkaReader): SaslAnswer {
    const requested = r.string();
    const w = new KafkaWriter(64);
    if (this.mode === "off" || this.phase !== "start") {
      w.int16(code("ILLEGAL_SASL_STATE")).array(
        this.mode === "off" ? [] : SASL_MECHANISMS_ENABLED,
        (x, m) => x.string(m),
      );
      return { body: w.finish(), close: false };
    }
    if (!isScramMechanism(requested) || !SASL_MECHANISMS_ENABLED.includes(requested)) {
      w.int16(code("UNSUPPORTED_SASL_MECHANISM")).array(SASL_MECHANISMS_ENABLED, (x, m) =>
        x.string(m),
      );
      return { body: w.finish(), close: false };
    }
    this.mechanism = requested;
    this.handshakeVersion = version;
    this.exchange = new ScramServerExchange(requested, this.lookup, undefined, this.decoy);
    this.phase = "handshaken";
    w.int16(code("NONE")).array(SASL_MECHANISMS_ENABLED, (x, m) => x.string(m));
    return { body: w.finish(), close: false };
  }

  /** SaslAuthenticate v0-v2 (v2 flexible: compact bytes and strings, tagged fields). */
  authenticate(version: number, r: KafkaReader): SaslAnswer {
    const flexible = version >= SASL_AUTHENTICATE_FLEXIBLE_SINCE;
    const f = fieldReader(r, flexible);
    const token = f.bytes();
    f.tags();
    const answer = (
      errorCode: number,
      message: string | null,
      bytes: Buffer,
      close: boolean,
    ): SaslAnswer => {
      const w = new KafkaWriter(64 + bytes.length);
      const o = fieldWriter(w, flexible);
      w.int16(errorCode);
      o.string(message);
      o.bytes(bytes);
      if (version >= 1) w.int64(0n); // session_lifetime_ms: no re-authentication (KIP-368) required
      o.tags();
      return { body: w.finish(), close };
    };
    if (this.mode === "off" || this.phase !== "handshaken" || this.exchange === undefined) {
      return answer(
        code("ILLEGAL_SASL_STATE"),
        "SaslAuthenticate is not expected in this state: send SaslHandshake first",
        Buffer.alloc(0),
        this.mode === "required" && this.phase !== "authenticated",
      );
    }
    const step = this.step(token);
    if (!step.ok) {
      return answer(
        code("SASL_AUTHENTICATION_FAILED"),
        `Authentication failed during authentication due to invalid credentials with SASL mechanism ${this.mechanism}`,
        Buffer.alloc(0),
        true,
      );
    }
    return answer(code("NONE"), null, step.response, false);
  }

  /** A raw token after a v0 handshake; undefined response means close the connection (Kafka's v0 failure). */
  rawToken(token: Buffer): { response: Buffer | undefined } {
    const step = this.step(token);
    return { response: step.ok ? step.response : undefined };
  }

  private step(token: Buffer): { ok: true; response: Buffer } | { ok: false } {
    const s = this.exchange!.step(token);
    if (!s.ok) {
      this.phase = "failed";
      this.failure = s.message;
      return { ok: false };
    }
    if (s.done) {
      this.phase = "authenticated";
      this.principal = `User:${s.user}`;
    }
    return { ok: true, response: s.response };
  }
}

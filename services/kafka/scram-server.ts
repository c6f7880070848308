// The server side of one SCRAM exchange (RFC 5802 section 3; Kafka's ScramSaslServer):
// client-first -> server-first (combined nonce, salt, iterations); client-final (proof) ->
// server-final (signature) or a failure. No channel binding (gs2 flag "n" or "y"; "p=" is
// refused), an authzid must equal the user name (Kafka's rule). An unknown user gets a
// server-first with a decoy salt and iteration count (scram-decoy.ts), and fails at the proof
// like a wrong password: the answers do not tell which users exist.
// The client-final nonce must end with the combined nonce (Kafka's check; librdkafka repeats
// its client nonce in front of it).
// The proof is checked in constant time (timingSafeEqual of H(ClientKey) and StoredKey).
import { randomBytes, timingSafeEqual } from "node:crypto";
import { scramDecoy, type DecoyLookup } from "../../libs/common/scram-decoy.js";
import {
  digest,
  hashOf,
  hmac,
  type ScramCredential,
  type ScramMechanism,
  xor,
} from "../../libs/common/scram.js";

/** Bound on a client message: SCRAM messages are a few hundred bytes. */
export const SCRAM_MESSAGE_BYTES_MAX = 4096;
const NONCE_BYTES = 24;

export type ScramStep =
  | { readonly ok: true; readonly response: Buffer; readonly done: false }
  | { readonly ok: true; readonly response: Buffer; readonly done: true; readonly user: string }
  | { readonly ok: false; readonly message: string };

export class ScramServerExchange {
  private state: "first" | "final" | "over" = "first";
  private user = "";
  private credential: ScramCredential | undefined;
  private clientFirstBare = "";
  private serverFirst = "";
  private gs2Header = "";
  private nonce = "";

  constructor(
    private readonly mechanism: ScramMechanism,
    private readonly lookup: (
      user: string,
      mechanism: ScramMechanism,
    ) => ScramCredential | undefined,
    /** The server's nonce part (tests pin it to reproduce RFC 7677's example). */
    private readonly serverNonce: () => string = () =>
      randomBytes(NONCE_BYTES).toString("base64url"),
    /** Salt and iterations for an unknown user (the listener's: from the cluster's credentials). */
    private readonly decoy: DecoyLookup = (user, mechanism) => scramDecoy([], user, mechanism),
  ) {}

  /** Feeds the next client message; every failure ends the exchange. */
  step(message: Buffer): ScramStep {
    if (message.length > SCRAM_MESSAGE_BYTES_MAX)
      return this.fail(
        `SCRAM message of ${message.length} bytes exceeds ${SCRAM_MESSAGE_BYTES_MAX}`,
      );
    const text = message.toString("utf8");
    if (this.state === "first") return this.first(text);
    if (this.state === "final") return this.final(text);
    return this.fail("the SCRAM exchange is over");
  }

  private fail(message: string): ScramStep {
    this.state = "over";
    return { ok: false, message };
  }

  private first(text: string): ScramStep {
    // gs2-header = gs2-cbind-flag "," [ authzid ] ","
    const m = /^([ny]|p=[^,]*),(a=[^,]*)?,(.*)$/s.exec(text);
    if (!m) return this.fail("invalid SCRAM client-first message");
    if (m[1]!.startsWith("p=")) return this.fail("SCRAM channel binding is not supported");
    const bare = m[3]!;
    const attrs = bare.split(",");
    if (attrs.length < 2 || !attrs[0]!.startsWith("n=") || !attrs[1]!.startsWith("r="))
      return this.fail("invalid SCRAM client-first message: expected n=<user>,r=<nonce>");
    if (attrs.some((a) => a.startsWith("m=")))
      return this.fail("SCRAM mandatory extensions are not supported");
    const user = decodeSaslName(attrs[0]!.slice(2));
    if (user === undefined || user.length === 0) return this.fail("invalid SCRAM user name");
    const clientNonce = attrs[1]!.slice(2);
    if (!/^[\x21-\x2b\x2d-\x7e]+$/.test(clientNonce))
      return this.fail("invalid SCRAM client nonce");
    if (m[2] !== undefined) {
      const authzid = decodeSaslName(m[2].slice(2));
      if (authzid !== undefined && authzid !== "" && authzid !== user)
        return this.fail("the SCRAM authorization id must be the user name");
    }
    this.user = user;
    this.credential = this.lookup(user, this.mechanism);
    const { salt, iterations } = this.credential ?? this.decoy(user, this.mechanism);
    this.gs2Header = text.slice(0, text.length - bare.length);
    this.clientFirstBare = bare;
    this.nonce = clientNonce + this.serverNonce();
    this.serverFirst = `r=${this.nonce},s=${salt.toString("base64")},i=${iterations}`;
    this.state = "final";
    return { ok: true, response: Buffer.from(this.serverFirst, "utf8"), done: false };
  }

  private final(text: string): ScramStep {
    const proofAt = text.lastIndexOf(",p=");
    if (proofAt < 0) return this.fail("invalid SCRAM client-final message: no proof");
    const withoutProof = text.slice(0, proofAt);
    const attrs = withoutProof.split(",");
    if (attrs.length < 2 || !attrs[0]!.startsWith("c=") || !attrs[1]!.startsWith("r="))
      return this.fail("invalid SCRAM client-final message: expected c=...,r=...");
    if (Buffer.from(attrs[0]!.slice(2), "base64").toString("utf8") !== this.gs2Header)
      return this.fail("SCRAM channel binding data does not match the client-first message");
    // Kafka's ScramSaslServer checks endsWith, not equality: librdkafka sends its client nonce
    // followed by the whole combined nonce. The server's part (freshness) must be there either way.
    if (!attrs[1]!.slice(2).endsWith(this.nonce)) return this.fail("SCRAM nonce does not match");
    const hash = hashOf(this.mechanism);
    const proof = Buffer.from(text.slice(proofAt + 3), "base64");
    const credential = this.credential;
    this.state = "over";
    const authMessage = `${this.clientFirstBare},${this.serverFirst},${withoutProof}`;
    if (credential === undefined) return { ok: false, message: `unknown user "${this.user}"` };
    if (proof.length !== credential.storedKey.length)
      return { ok: false, message: `a proof of ${proof.length} bytes` };
    const clientSignature = hmac(hash, credential.storedKey, authMessage);
    const clientKey = xor(proof, clientSignature);
    if (!timingSafeEqual(digest(hash, clientKey), credential.storedKey))
      return { ok: false, message: `wrong password for user "${this.user}"` };
    const serverSignature = hmac(hash, credential.serverKey, authMessage);
    return {
      ok: true,
      response: Buffer.from(`v=${serverSignature.toString("base64")}`, "utf8"),
      done: true,
      user: this.user,
    };
  }
}

/** saslname of RFC 5802: "=2C" is ",", "=3D" is "="; any other "=" is malformed. */
export function decodeSaslName(s: string): string | undefined {
  if (/=(?!2C|3D)/.test(s)) return undefined;
  return s.replace(/=2C/g, ",").replace(/=3D/g, "=");
}

// A raw Kafka connection logged in with SASL/SCRAM-SHA-512 (SaslHandshake v1, SaslAuthenticate
// v1), for frame-level tests against a listener started with --kafka-sasl required (which needs
// TLS: pass `tls` with the cluster CA; without it the connection is plaintext).
import type { ConnectionOptions } from "node:tls";
import { digest, hmac, saltedPassword, xor } from "../../../libs/common/scram.js";
import { kafkaRequest, KafkaRawConnection } from "./kafka-raw-client.js";

const handshake = (id: number): Buffer => kafkaRequest(17, 1, id, (w) => w.string("SCRAM-SHA-512"));
const authenticate = (id: number, token: string): Buffer =>
  kafkaRequest(36, 1, id, (w) => w.nullableBytes(Buffer.from(token)));

async function answerOk(c: KafkaRawConnection, what: string): Promise<Buffer | null> {
  const a = await c.next(10_000);
  if (a === undefined) throw new Error(`connection closed before the ${what} answer`);
  const code = a.body.int16();
  if (code !== 0) throw new Error(`${what} answered error ${code}`);
  if (what === "handshake") return null;
  a.body.nullableString();
  return a.body.nullableBytes();
}

export async function rawSaslLogin(
  port: number,
  user: string,
  password: string,
  options: { tls?: ConnectionOptions } = {},
): Promise<KafkaRawConnection> {
  const c = options.tls
    ? await KafkaRawConnection.openTls(port, options.tls)
    : await KafkaRawConnection.open(port);
  c.s.write(handshake(1));
  await answerOk(c, "handshake");
  const bare = `n=${user},r=rawnonce${Date.now()}${Math.random().toString(36).slice(2)}`;
  c.s.write(authenticate(2, `n,,${bare}`));
  const first = (await answerOk(c, "client-first"))!.toString();
  const a = Object.fromEntries(first.split(",").map((x) => [x[0], x.slice(2)]));
  const salted = saltedPassword("SCRAM-SHA-512", password, Buffer.from(a.s!, "base64"), +a.i!);
  const clientKey = hmac("sha512", salted, "Client Key");
  const withoutProof = `c=biws,r=${a.r}`;
  const sig = hmac("sha512", digest("sha512", clientKey), `${bare},${first},${withoutProof}`);
  c.s.write(authenticate(3, `${withoutProof},p=${xor(clientKey, sig).toString("base64")}`));
  await answerOk(c, "client-final");
  return c;
}

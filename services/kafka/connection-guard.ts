// Connection slots of the Kafka listener that one client cannot take from everyone: at most
// perIpMax connections per client IP address (Kafka's max.connections.per.ip; one more is
// closed at once, counted, and logged at a bounded rate), and a connection with nothing read or
// written for idleMs is closed (Kafka's connections.max.idle.ms). The TLS handshake deadline is
// the TLS server's (kafka-server.ts); its expiries are counted here too.
import type { Clock } from "../../libs/runtime/clock.js";
import type { Socket } from "node:net";
import { Counter, type Registry } from "prom-client";
import type { Logger } from "pino";
import type { KafkaConnectionSettings } from "../../libs/common/config.js";
import { FETCH_SESSION_CACHE_SLOTS_DEFAULT } from "./fetch-sessions.js";

export const KAFKA_CONNECTION_SETTINGS_DEFAULT: KafkaConnectionSettings = {
  perIpMax: 200,
  idleMs: 600_000,
  tlsHandshakeTimeoutMs: 10_000,
  inflationBytesMax: 256 * 1024 * 1024,
  fetchSessionCacheSlots: FETCH_SESSION_CACHE_SLOTS_DEFAULT,
};

/** At most one warning per this long about refused connections (with the count since the last). */
const REFUSAL_LOG_INTERVAL_MS = 10_000;

export type ConnectionCloseReason = "ip_limit" | "idle" | "tls_handshake";

export class ConnectionGuard {
  private readonly perIp = new Map<string, number>();
  private readonly closed: Counter<"reason"> | undefined;
  private refusedSinceLog = 0;
  private lastRefusalLogMs = -Infinity;

  constructor(
    private readonly settings: KafkaConnectionSettings,
    private readonly log: Logger,
    private readonly clock: Clock,
    registry?: Registry,
  ) {
    if (registry !== undefined) {
      const name = "tern_kafka_connections_closed_total";
      this.closed =
        (registry.getSingleMetric(name) as Counter<"reason"> | undefined) ??
        new Counter({
          name,
          help: "Kafka connections the listener closed by its own bounds, by reason (ip_limit: over --kafka-max-connections-per-ip; idle; tls_handshake: not finished in time).",
          labelNames: ["reason"],
          registers: [registry],
        });
    }
  }

  /**
   * A new TCP connection (before any TLS handshake): counted against its address, or closed at
   * once when that address already holds perIpMax. False when closed.
   */
  admit(socket: Socket): boolean {
    const ip = socket.remoteAddress;
    if (ip === undefined) {
      socket.destroy(); // already gone
      return false;
    }
    const held = this.perIp.get(ip) ?? 0;
    if (held >= this.settings.perIpMax) {
      socket.destroy();
      this.count("ip_limit");
      this.logRefusal(ip);
      return false;
    }
    this.perIp.set(ip, held + 1);
    socket.once("close", () => {
      const n = (this.perIp.get(ip) ?? 1) - 1;
      if (n <= 0) this.perIp.delete(ip);
      else this.perIp.set(ip, n);
    });
    return true;
  }

  /** Closes the connection once nothing has been read or written on it for idleMs. */
  closeWhenIdle(socket: Socket): void {
    socket.setTimeout(this.settings.idleMs, () => {
      this.count("idle");
      this.log.info({ idleMs: this.settings.idleMs }, "kafka connection closed: idle");
      socket.destroy();
    });
  }

  count(reason: ConnectionCloseReason): void {
    this.closed?.inc({ reason });
  }

  private logRefusal(ip: string): void {
    this.refusedSinceLog++;
    const now = this.clock.monotonicMs();
    if (now - this.lastRefusalLogMs < REFUSAL_LOG_INTERVAL_MS) return;
    this.log.warn(
      { ip, refused: this.refusedSinceLog, perIpMax: this.settings.perIpMax },
      "kafka connections refused: the client address holds --kafka-max-connections-per-ip",
    );
    this.lastRefusalLogMs = now;
    this.refusedSinceLog = 0;
  }
}

// Service configuration: command-line flags override environment variables (TERN_*), which
// override defaults. Every value is validated at start; a bad one stops the process with a
// one-line reason (ConfigError) before anything is opened.
import { parseArgs } from "node:util";
import { parseKafkaFeatureLevels, type KafkaFeatureLevels } from "./kafka-features.js";
import { parseTlsConfig, SERVICE_TLS_FLAGS, TlsConfigError, type TlsConfig } from "./tls-config.js";

export type Role = "controller" | "broker" | "coordinator";

export interface PeerAddress {
  readonly id: number;
  readonly host: string;
  readonly port: number;
}

export interface ServiceConfig {
  readonly role: Role;
  readonly nodeId: number;
  /** gRPC bind address. */
  readonly listen: { host: string; port: number };
  /** Address other nodes and clients use to reach this one. */
  readonly advertise: { host: string; port: number };
  /** Prometheus /metrics HTTP bind address. */
  readonly metricsListen: { host: string; port: number };
  /** Broker: the Kafka protocol listener's bind address (undefined: none). */
  readonly kafkaListen: { host: string; port: number } | undefined;
  /** Broker: the Kafka address clients are told (Metadata); default the bind address. */
  readonly kafkaAdvertise: { host: string; port: number } | undefined;
  /** Broker and coordinator: SASL/SCRAM on the Kafka listener ("off": no authentication, the default). */
  readonly kafkaSasl: "required" | "off";
  /** Broker and coordinator: how long a failed SASL authentication waits before its answer and close (Kafka's connection.failed.authentication.delay.ms). */
  readonly kafkaSaslFailureDelayMs: number;
  /** Broker and coordinator: client quotas' rate window, Kafka's quota.window.num × quota.window.size.seconds. */
  readonly quotaWindow: { readonly samples: number; readonly sampleMs: number };
  /** Broker and coordinator: bounds on the Kafka listener's connections and their inflation (services/kafka/connection-guard.ts). */
  readonly kafkaConnections: KafkaConnectionSettings;
  /** Broker and coordinator: Kafka's auto.create.topics.enable (services/kafka/auto-create-topics.ts). */
  readonly kafkaAutoCreateTopics: boolean;
  /** Broker and coordinator: the Kafka features' finalized levels (ApiVersions v3+; libs/common/kafka-features.ts). */
  readonly kafkaFeatureLevels: KafkaFeatureLevels;
  /** Broker and coordinator: ACLs on the Kafka listener ("acl"), or none (the default); super-users are never refused. */
  readonly kafkaAuthorizer: { readonly superUsers: readonly string[] } | undefined;
  /** Every role: ACLs on the gRPC API ("acl", needs TLS), or none (the default); super-users are never refused. */
  readonly grpcAuthorizer: { readonly superUsers: readonly string[] } | undefined;
  /**
   * True when some listener of the cluster requires authentication, as this process's flags say
   * (`--security acl`, or the per-listener flags, which every process is given): admin operations (users, ACL changes, SCRAM keys) are then never served
   * to an anonymous caller on any listener (libs/server/auth/admin-guard.ts).
   */
  readonly authenticationRequired: boolean;
  readonly dataDir: string;
  /** The cluster this node belongs to; recorded in its data directory on first start and checked on every start. */
  readonly clusterId: string;
  /** The controller quorum: id@host:port entries. */
  readonly controllers: readonly PeerAddress[];
  readonly rack: string | undefined;
  readonly logLevel: string;
  readonly electionTimeoutMs: number;
  readonly heartbeatIntervalMs: number;
  /** Broker: the process's record cache (libs/storage/record-cache.ts). */
  readonly recordCacheBytes: number;
  /** Broker: free bytes the data directory keeps; below it produce is refused. */
  readonly diskReserveBytes: number;
  /** Broker: the log cleaner's key map (Kafka's log.cleaner.dedupe.buffer.size; docs/storage.md, "Compaction"). */
  readonly logCleanerDedupeBufferBytes: number;
  /** Broker: bytes the log cleaner reads and writes per second at most (0: unlimited). */
  readonly logCleanerIoBytesPerSecond: number;
  /** Broker: how often the log cleaner looks for a partition to clean when it found none. */
  readonly logCleanerBackoffMs: number;
  readonly tickMs: number;
  readonly shutdownTimeoutMs: number;
  /** Broker: consumer-group session timeout (Kafka's group.consumer.session.timeout.ms). */
  readonly groupSessionTimeoutMs: number;
  /** Broker: heartbeat interval told to group members (group.consumer.heartbeat.interval.ms). */
  readonly groupHeartbeatIntervalMs: number;
  /** TLS on the gRPC listener and every outgoing channel (mutual between tern processes); undefined: plaintext. */
  readonly tls: TlsConfig | undefined;
}

export interface KafkaConnectionSettings {
  /** Connections one client IP address may hold at once (Kafka's max.connections.per.ip). */
  readonly perIpMax: number;
  /** A connection with nothing read or written for this long is closed (Kafka's connections.max.idle.ms). */
  readonly idleMs: number;
  /** A TLS connection must finish its handshake within this, else it is closed. */
  readonly tlsHandshakeTimeoutMs: number;
  /** Inflated record bytes the listener's Produce requests may hold at once (process-wide). */
  readonly inflationBytesMax: number;
  /** Fetch sessions (KIP-227) the listener keeps at once; 0: none (Kafka's max.incremental.fetch.session.cache.slots). */
  readonly fetchSessionCacheSlots: number;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

interface OptionSpec {
  readonly flag: string;
  readonly env: string;
  readonly help: string;
  readonly default?: (role: Role) => string | undefined;
}

const DEFAULT_PORTS: Record<Role, number> = { controller: 9090, broker: 9190, coordinator: 9290 };
/** A broker's Kafka listener defaults to its gRPC port plus this (9190 -> 9390). */
export const KAFKA_PORT_OFFSET = 200;

export const OPTIONS: readonly OptionSpec[] = [
  {
    flag: "node-id",
    env: "TERN_NODE_ID",
    help: "this node's id, a non-negative integer unique within its role",
  },
  {
    flag: "listen",
    env: "TERN_LISTEN",
    help: "gRPC bind address HOST:PORT",
    default: (r) => `127.0.0.1:${DEFAULT_PORTS[r]}`,
  },
  {
    flag: "advertise",
    env: "TERN_ADVERTISE",
    help: "address others use to reach this node, HOST:PORT (default: --listen)",
  },
  {
    flag: "metrics-listen",
    env: "TERN_METRICS_LISTEN",
    help: "Prometheus HTTP bind address HOST:PORT",
    default: (r) => `127.0.0.1:${DEFAULT_PORTS[r] + 1000}`,
  },
  {
    flag: "kafka-listen",
    env: "TERN_KAFKA_LISTEN",
    help: `broker and coordinator: Kafka protocol listener HOST:PORT, or "none" (default: the gRPC host, its port + ${KAFKA_PORT_OFFSET})`,
  },
  {
    flag: "security",
    env: "TERN_SECURITY",
    help: '"acl": every listener authenticates (gRPC: client certificate or username/password; Kafka: SASL/SCRAM) and checks the cluster\'s ACLs; needs TLS. "none": nobody is authenticated (development). Sets the --kafka-sasl, --kafka-authorizer and --grpc-authorizer defaults',
    default: () => "none",
  },
  {
    flag: "super-users",
    env: "TERN_SUPER_USERS",
    help: "comma-separated principals (User:<name>) no ACL refuses on any listener (default for --kafka-super-users and --grpc-super-users)",
  },
  {
    flag: "allow-mixed-security",
    env: "TERN_ALLOW_MIXED_SECURITY",
    help: '"true" lets a listener that requires authentication run beside one that does not (refused at start otherwise)',
    default: () => "false",
  },
  {
    flag: "kafka-sasl",
    env: "TERN_KAFKA_SASL",
    help: 'broker and coordinator: "required" makes every Kafka connection authenticate with SASL/SCRAM-SHA-512 (users: tern user create; needs TLS), or "off" (default: from --security)',
  },
  {
    flag: "kafka-sasl-failure-delay-ms",
    env: "TERN_KAFKA_SASL_FAILURE_DELAY_MS",
    help: "broker and coordinator: delay before a failed SASL authentication is answered and its connection closed (0..10000; Kafka's connection.failed.authentication.delay.ms)",
    default: () => "100",
  },
  {
    flag: "quota-window-num",
    env: "TERN_QUOTA_WINDOW_NUM",
    help: "broker and coordinator: samples a client quota's rate is measured over (2..100; Kafka's quota.window.num)",
    default: () => "11",
  },
  {
    flag: "quota-window-size-seconds",
    env: "TERN_QUOTA_WINDOW_SIZE_SECONDS",
    help: "broker and coordinator: length of one client-quota sample in seconds (1..3600; Kafka's quota.window.size.seconds)",
    default: () => "1",
  },
  {
    flag: "kafka-max-connections-per-ip",
    env: "TERN_KAFKA_MAX_CONNECTIONS_PER_IP",
    help: "broker and coordinator: Kafka connections one client IP address may hold at once; more are closed at once (1..100000; Kafka's max.connections.per.ip)",
    default: () => "200",
  },
  {
    flag: "kafka-connections-max-idle-ms",
    env: "TERN_KAFKA_CONNECTIONS_MAX_IDLE_MS",
    help: "broker and coordinator: a Kafka connection with nothing read or written for this long is closed (1000..86400000; Kafka's connections.max.idle.ms)",
    default: () => "600000",
  },
  {
    flag: "kafka-tls-handshake-timeout-ms",
    env: "TERN_KAFKA_TLS_HANDSHAKE_TIMEOUT_MS",
    help: "broker and coordinator: a TLS Kafka connection that has not finished its handshake within this is closed (100..120000)",
    default: () => "10000",
  },
  {
    flag: "kafka-inflation-bytes-max",
    env: "TERN_KAFKA_INFLATION_BYTES_MAX",
    help: "broker and coordinator: bytes of compressed Produce batches the Kafka listener inflates and holds at once, over all connections (67108864..17179869184)",
    default: () => String(256 * 1024 * 1024),
  },
  {
    flag: "kafka-fetch-session-cache-slots",
    env: "TERN_KAFKA_FETCH_SESSION_CACHE_SLOTS",
    help: "broker and coordinator: fetch sessions (KIP-227) the Kafka listener keeps at once, over all connections; 0 answers every fetch without one (0..100000; Kafka's max.incremental.fetch.session.cache.slots)",
    default: () => "1000",
  },
  {
    flag: "kafka-auto-create-topics",
    env: "TERN_KAFKA_AUTO_CREATE_TOPICS",
    help: 'broker and coordinator: "true" lets a Kafka Metadata request that allows it create a missing topic with the default partitions and replication factor (Kafka\'s auto.create.topics.enable); "false" (the default) answers it UNKNOWN_TOPIC_OR_PARTITION; the same on every process of a cluster',
    default: () => "false",
  },
  {
    flag: "kafka-features",
    env: "TERN_KAFKA_FEATURES",
    help: "broker and coordinator: Kafka feature levels finalized below the default, NAME=LEVEL,... (transaction.version=1 keeps Java clients on transactions V1); the same on every process of a cluster (libs/common/kafka-features.ts)",
    default: () => "",
  },
  {
    flag: "kafka-authorizer",
    env: "TERN_KAFKA_AUTHORIZER",
    help: 'broker and coordinator: "acl" checks every Kafka request against the cluster\'s ACLs (tern acl create), or "none" (default: from --security)',
  },
  {
    flag: "kafka-super-users",
    env: "TERN_KAFKA_SUPER_USERS",
    help: "broker and coordinator: comma-separated principals (User:<name>) no ACL refuses (default: --super-users)",
  },
  {
    flag: "grpc-authorizer",
    env: "TERN_GRPC_AUTHORIZER",
    help: 'every role: "acl" makes every client gRPC call authenticate (client certificate or username/password) and checks it against the cluster\'s ACLs; needs TLS; or "none" (default: from --security)',
  },
  {
    flag: "grpc-super-users",
    env: "TERN_GRPC_SUPER_USERS",
    help: "every role: comma-separated principals (User:<name>) no gRPC ACL refuses (default: --kafka-super-users)",
  },
  {
    flag: "kafka-advertise",
    env: "TERN_KAFKA_ADVERTISE",
    help: "broker and coordinator: Kafka address given to clients in Metadata and FindCoordinator, HOST:PORT (default: --kafka-listen)",
  },
  { flag: "data-dir", env: "TERN_DATA_DIR", help: "directory holding this node's level database" },
  {
    flag: "cluster-id",
    env: "TERN_CLUSTER_ID",
    help: "the cluster's id ([A-Za-z0-9._-]{1,64}); a data directory of another cluster refuses to start",
    default: () => "tern",
  },
  {
    flag: "controllers",
    env: "TERN_CONTROLLERS",
    help: "controller quorum as id@host:port,id@host:port,...",
    default: () => "0@127.0.0.1:9090",
  },
  { flag: "rack", env: "TERN_RACK", help: "rack or zone name used to spread replicas" },
  { flag: "log-level", env: "TERN_LOG_LEVEL", help: "pino log level", default: () => "info" },
  {
    flag: "election-timeout-ms",
    env: "TERN_ELECTION_TIMEOUT_MS",
    help: "Raft election timeout base",
    default: () => "1500",
  },
  {
    flag: "heartbeat-interval-ms",
    env: "TERN_HEARTBEAT_INTERVAL_MS",
    help: "Raft heartbeat interval",
    default: () => "150",
  },
  { flag: "tick-ms", env: "TERN_TICK_MS", help: "Raft tick period", default: () => "50" },
  {
    flag: "shutdown-timeout-ms",
    env: "TERN_SHUTDOWN_TIMEOUT_MS",
    help: "bound on a graceful shutdown",
    default: () => "10000",
  },
  {
    flag: "record-cache-bytes",
    env: "TERN_RECORD_CACHE_BYTES",
    help: "broker: memory for recent and read-ahead records, shared by all partitions",
    default: () => String(64 * 1024 * 1024),
  },
  {
    flag: "disk-reserve-bytes",
    env: "TERN_DISK_RESERVE_BYTES",
    help: "broker: below this much free space in the data directory, produce is refused",
    default: () => String(256 * 1024 * 1024),
  },
  {
    flag: "cleaner-dedupe-buffer-bytes",
    env: "TERN_CLEANER_DEDUPE_BUFFER_BYTES",
    help: "broker: memory of the log cleaner's key map (compacted topics)",
    default: () => String(128 * 1024 * 1024),
  },
  {
    flag: "cleaner-io-bytes-per-second",
    env: "TERN_CLEANER_IO_BYTES_PER_SECOND",
    help: "broker: bytes the log cleaner reads and writes per second at most (0: unlimited)",
    default: () => "0",
  },
  {
    flag: "cleaner-backoff-ms",
    env: "TERN_CLEANER_BACKOFF_MS",
    help: "broker: pause of the log cleaner when no partition needs cleaning",
    default: () => "15000",
  },
  {
    flag: "group-session-timeout-ms",
    env: "TERN_GROUP_SESSION_TIMEOUT_MS",
    help: "broker: a consumer-group member not heard from this long is removed",
    default: () => "45000",
  },
  {
    flag: "group-heartbeat-interval-ms",
    env: "TERN_GROUP_HEARTBEAT_INTERVAL_MS",
    help: "broker: how often consumer-group members heartbeat",
    default: () => "5000",
  },
  {
    flag: "tls-cert-file",
    env: "TERN_TLS_CERT_FILE",
    help: "PEM certificate chain of this process (SAN URI tern:role:<role>); with --tls-key-file and --tls-ca-file turns TLS on",
  },
  { flag: "tls-key-file", env: "TERN_TLS_KEY_FILE", help: "PEM private key of --tls-cert-file" },
  {
    flag: "tls-ca-file",
    env: "TERN_TLS_CA_FILE",
    help: "PEM bundle of the cluster CA: peers' and servers' certificates must chain to it",
  },
  {
    flag: "tls-reload-ms",
    env: "TERN_TLS_RELOAD_MS",
    help: "how often the TLS files are checked for a rotated certificate",
    default: () => "10000",
  },
];

export function parseHostPort(value: string, what: string): { host: string; port: number } {
  const m = /^(\[[^\]]+\]|[^:\s]+):(\d{1,5})$/.exec(value.trim());
  if (!m) throw new ConfigError(`${what}: expected HOST:PORT, got "${value}"`);
  const port = Number(m[2]);
  if (port < 0 || port > 65535)
    throw new ConfigError(`${what}: port ${port} is out of range 0-65535`);
  return { host: m[1]!.replace(/^\[|\]$/g, ""), port };
}

export function parsePeers(value: string, what: string): PeerAddress[] {
  const parts = value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (parts.length === 0) throw new ConfigError(`${what}: the peer list is empty`);
  const peers = parts.map((part) => {
    const m = /^(\d+)@(.+)$/.exec(part);
    if (!m) throw new ConfigError(`${what}: expected id@host:port, got "${part}"`);
    return { id: Number(m[1]), ...parseHostPort(m[2]!, what) };
  });
  const ids = new Set(peers.map((p) => p.id));
  if (ids.size !== peers.length) throw new ConfigError(`${what}: duplicate node id in "${value}"`);
  return peers;
}

function parseIntIn(value: string, what: string, min: number, max: number): number {
  if (!/^-?\d+$/.test(value.trim()))
    throw new ConfigError(`${what}: expected an integer, got "${value}"`);
  const n = Number(value);
  if (n < min || n > max) throw new ConfigError(`${what}: ${n} is outside ${min}..${max}`);
  return n;
}

function parseSuperUsers(value: string, what: string): string[] {
  const users = value
    .split(",")
    .map((x) => x.trim())
    .filter((x) => x.length > 0);
  for (const u of users)
    if (!/^User:.+$/.test(u)) throw new ConfigError(`${what}: "${u}" is not User:<name>`);
  return users;
}

/** Parses flags and environment into a validated config; throws ConfigError on anything wrong. */
export function loadServiceConfig(
  role: Role,
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
): ServiceConfig {
  let parsed: Record<string, string | boolean | undefined>;
  try {
    parsed = parseArgs({
      args: [...argv],
      options: Object.fromEntries(OPTIONS.map((o) => [o.flag, { type: "string" as const }])),
      strict: true,
      allowPositionals: false,
    }).values as Record<string, string | undefined>;
  } catch (e) {
    throw new ConfigError((e as Error).message.split("\n")[0]!);
  }
  const raw = (flag: string): string | undefined => {
    const spec = OPTIONS.find((o) => o.flag === flag)!;
    const v = parsed[flag] ?? env[spec.env];
    return typeof v === "string" ? v : spec.default?.(role);
  };
  const nodeIdRaw = raw("node-id");
  if (nodeIdRaw === undefined) throw new ConfigError("--node-id (or TERN_NODE_ID) is required");
  const nodeId = parseIntIn(nodeIdRaw, "--node-id", 0, 1_000_000);
  const listen = parseHostPort(raw("listen")!, "--listen");
  const advertiseRaw = raw("advertise");
  const dataDir = raw("data-dir") ?? `.data/${role}-${nodeId}`;
  const clusterId = raw("cluster-id")!;
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(clusterId))
    throw new ConfigError(
      `--cluster-id: expected 1-64 characters of [A-Za-z0-9._-], got "${clusterId}"`,
    );
  const electionTimeoutMs = parseIntIn(
    raw("election-timeout-ms")!,
    "--election-timeout-ms",
    100,
    60_000,
  );
  const heartbeatIntervalMs = parseIntIn(
    raw("heartbeat-interval-ms")!,
    "--heartbeat-interval-ms",
    10,
    10_000,
  );
  const tickMs = parseIntIn(raw("tick-ms")!, "--tick-ms", 5, 1_000);
  if (heartbeatIntervalMs * 3 > electionTimeoutMs) {
    throw new ConfigError(
      `--heartbeat-interval-ms (${heartbeatIntervalMs}) must be at most a third of --election-timeout-ms (${electionTimeoutMs})`,
    );
  }
  if (tickMs > heartbeatIntervalMs)
    throw new ConfigError(
      `--tick-ms (${tickMs}) must not exceed --heartbeat-interval-ms (${heartbeatIntervalMs})`,
    );
  const kafkaRaw = raw("kafka-listen");
  const kafkaListen =
    role === "controller" || kafkaRaw === "none"
      ? undefined
      : kafkaRaw !== undefined
        ? parseHostPort(kafkaRaw, "--kafka-listen")
        : { host: listen.host, port: listen.port + KAFKA_PORT_OFFSET };
  if (kafkaListen !== undefined && kafkaListen.port > 65535)
    throw new ConfigError(
      `--kafka-listen: port ${kafkaListen.port} is out of range; set --kafka-listen`,
    );
  const kafkaAdvertiseRaw = raw("kafka-advertise");
  const security = raw("security")!;
  if (security !== "acl" && security !== "none")
    throw new ConfigError(`--security: expected "acl" or "none", got "${security}"`);
  const secured = security === "acl";
  const allowMixedRaw = raw("allow-mixed-security")!;
  if (allowMixedRaw !== "true" && allowMixedRaw !== "false")
    throw new ConfigError(
      `--allow-mixed-security: expected "true" or "false", got "${allowMixedRaw}"`,
    );
  const kafkaSasl = raw("kafka-sasl") ?? (secured ? "required" : "off");
  if (kafkaSasl !== "required" && kafkaSasl !== "off")
    throw new ConfigError(`--kafka-sasl: expected "required" or "off", got "${kafkaSasl}"`);
  const kafkaSaslFailureDelayMs = parseIntIn(
    raw("kafka-sasl-failure-delay-ms")!,
    "--kafka-sasl-failure-delay-ms",
    0,
    10_000,
  );
  const quotaWindow = {
    samples: parseIntIn(raw("quota-window-num")!, "--quota-window-num", 2, 100),
    sampleMs:
      1_000 *
      parseIntIn(raw("quota-window-size-seconds")!, "--quota-window-size-seconds", 1, 3_600),
  };
  const kafkaConnections: KafkaConnectionSettings = {
    perIpMax: parseIntIn(
      raw("kafka-max-connections-per-ip")!,
      "--kafka-max-connections-per-ip",
      1,
      100_000,
    ),
    idleMs: parseIntIn(
      raw("kafka-connections-max-idle-ms")!,
      "--kafka-connections-max-idle-ms",
      1_000,
      86_400_000,
    ),
    tlsHandshakeTimeoutMs: parseIntIn(
      raw("kafka-tls-handshake-timeout-ms")!,
      "--kafka-tls-handshake-timeout-ms",
      100,
      120_000,
    ),
    inflationBytesMax: parseIntIn(
      raw("kafka-inflation-bytes-max")!,
      "--kafka-inflation-bytes-max",
      64 * 1024 * 1024,
      16 * 1024 * 1024 * 1024,
    ),
    fetchSessionCacheSlots: parseIntIn(
      raw("kafka-fetch-session-cache-slots")!,
      "--kafka-fetch-session-cache-slots",
      0,
      100_000,
    ),
  };
  const kafkaAutoCreateTopicsRaw = raw("kafka-auto-create-topics")!;
  if (kafkaAutoCreateTopicsRaw !== "true" && kafkaAutoCreateTopicsRaw !== "false")
    throw new ConfigError(
      `--kafka-auto-create-topics: expected "true" or "false", got "${kafkaAutoCreateTopicsRaw}"`,
    );
  const kafkaFeatureLevels = parseKafkaFeatureLevels(raw("kafka-features")!);
  if ("error" in kafkaFeatureLevels)
    throw new ConfigError(`--kafka-features: ${String(kafkaFeatureLevels.error)}`);
  const kafkaAuthorizerRaw = raw("kafka-authorizer") ?? (secured ? "acl" : "none");
  if (kafkaAuthorizerRaw !== "acl" && kafkaAuthorizerRaw !== "none")
    throw new ConfigError(
      `--kafka-authorizer: expected "acl" or "none", got "${kafkaAuthorizerRaw}"`,
    );
  const commonSuperUsers = parseSuperUsers(raw("super-users") ?? "", "--super-users");
  const kafkaSuperUsersRaw = raw("kafka-super-users");
  const superUsers =
    kafkaSuperUsersRaw === undefined
      ? commonSuperUsers
      : parseSuperUsers(kafkaSuperUsersRaw, "--kafka-super-users");
  const kafkaAuthorizer = kafkaAuthorizerRaw === "acl" ? { superUsers } : undefined;
  const grpcAuthorizerRaw = raw("grpc-authorizer") ?? (secured ? "acl" : "none");
  if (grpcAuthorizerRaw !== "acl" && grpcAuthorizerRaw !== "none")
    throw new ConfigError(
      `--grpc-authorizer: expected "acl" or "none", got "${grpcAuthorizerRaw}"`,
    );
  const grpcSuperUsersRaw = raw("grpc-super-users");
  const grpcSuperUsers =
    grpcSuperUsersRaw === undefined
      ? kafkaSuperUsersRaw === undefined
        ? commonSuperUsers
        : superUsers
      : parseSuperUsers(grpcSuperUsersRaw, "--grpc-super-users");
  const kafkaAdvertise =
    kafkaListen === undefined
      ? undefined
      : kafkaAdvertiseRaw
        ? parseHostPort(kafkaAdvertiseRaw, "--kafka-advertise")
        : kafkaListen;
  const groupSessionTimeoutMs = parseIntIn(
    raw("group-session-timeout-ms")!,
    "--group-session-timeout-ms",
    100,
    3_600_000,
  );
  const groupHeartbeatIntervalMs = parseIntIn(
    raw("group-heartbeat-interval-ms")!,
    "--group-heartbeat-interval-ms",
    10,
    600_000,
  );
  if (groupHeartbeatIntervalMs >= groupSessionTimeoutMs) {
    throw new ConfigError(
      `--group-heartbeat-interval-ms (${groupHeartbeatIntervalMs}) must be below --group-session-timeout-ms (${groupSessionTimeoutMs})`,
    );
  }
  let tls: TlsConfig | undefined;
  try {
    tls = parseTlsConfig(
      {
        cert: raw("tls-cert-file"),
        key: raw("tls-key-file"),
        ca: raw("tls-ca-file"),
        reloadMs: raw("tls-reload-ms"),
      },
      SERVICE_TLS_FLAGS,
      { requireIdentity: true },
    );
  } catch (e) {
    if (e instanceof TlsConfigError) throw new ConfigError(e.message);
    throw e;
  }
  // Without TLS there are no identities: the processes themselves could not be told from users.
  if (grpcAuthorizerRaw === "acl" && tls === undefined)
    throw new ConfigError(
      `${secured && raw("grpc-authorizer") === undefined ? "--security acl" : "--grpc-authorizer acl"} needs TLS (--tls-cert-file, --tls-key-file, --tls-ca-file): without it no caller has an identity`,
    );
  const grpcAuthorizer = grpcAuthorizerRaw === "acl" ? { superUsers: grpcSuperUsers } : undefined;
  // The security flags describe the cluster's listeners, so a controller (no Kafka listener of
  // its own) given --kafka-sasl required knows the brokers' listeners require authentication.
  // SASL's SCRAM keys reach those listeners over gRPC (WatchMetadata): without TLS anyone could read them.
  const kafkaAuthenticates = kafkaSasl === "required";
  const grpcAuthenticates = grpcAuthorizer !== undefined;
  if (kafkaAuthenticates && tls === undefined)
    throw new ConfigError(
      "--kafka-sasl required needs TLS (--tls-cert-file, --tls-key-file, --tls-ca-file): the SCRAM keys reach the Kafka listeners over gRPC, which without TLS anyone could read",
    );
  if (kafkaAuthenticates !== grpcAuthenticates && allowMixedRaw !== "true")
    throw new ConfigError(
      `half-secured configuration: the ${kafkaAuthenticates ? "Kafka listeners require" : "gRPC API requires"} authentication (${kafkaAuthenticates ? "--kafka-sasl required" : "--grpc-authorizer acl"}) but the ${kafkaAuthenticates ? "gRPC API does" : "Kafka listeners do"} not (${kafkaAuthenticates ? "--grpc-authorizer none" : "--kafka-sasl off"}); use --security acl for every listener, or --allow-mixed-security true to run it this way`,
    );
  return {
    role,
    nodeId,
    listen,
    kafkaListen,
    kafkaAdvertise,
    kafkaSasl,
    kafkaSaslFailureDelayMs,
    quotaWindow,
    kafkaConnections,
    kafkaFeatureLevels,
    kafkaAutoCreateTopics: kafkaAutoCreateTopicsRaw === "true",
    kafkaAuthorizer,
    grpcAuthorizer,
    authenticationRequired: kafkaAuthenticates || grpcAuthenticates,
    advertise: advertiseRaw ? parseHostPort(advertiseRaw, "--advertise") : listen,
    metricsListen: parseHostPort(raw("metrics-listen")!, "--metrics-listen"),
    dataDir,
    clusterId,
    controllers: parsePeers(raw("controllers")!, "--controllers"),
    rack: raw("rack"),
    logLevel: raw("log-level")!,
    electionTimeoutMs,
    heartbeatIntervalMs,
    tickMs,
    shutdownTimeoutMs: parseIntIn(
      raw("shutdown-timeout-ms")!,
      "--shutdown-timeout-ms",
      100,
      600_000,
    ),
    recordCacheBytes: parseIntIn(
      raw("record-cache-bytes")!,
      "--record-cache-bytes",
      1024 * 1024,
      64 * 1024 * 1024 * 1024,
    ),
    diskReserveBytes: parseIntIn(raw("disk-reserve-bytes")!, "--disk-reserve-bytes", 0, 2 ** 50),
    logCleanerDedupeBufferBytes: parseIntIn(
      raw("cleaner-dedupe-buffer-bytes")!,
      "--cleaner-dedupe-buffer-bytes",
      64 * 1024,
      16 * 1024 * 1024 * 1024,
    ),
    logCleanerIoBytesPerSecond: parseIntIn(
      raw("cleaner-io-bytes-per-second")!,
      "--cleaner-io-bytes-per-second",
      0,
      2 ** 50,
    ),
    logCleanerBackoffMs: parseIntIn(
      raw("cleaner-backoff-ms")!,
      "--cleaner-backoff-ms",
      10,
      3_600_000,
    ),
    groupSessionTimeoutMs,
    groupHeartbeatIntervalMs,
    tls,
  };
}

// A 3-node Apache Kafka cluster in KRaft mode on loopback, for `npm run bench -- kafka-peer`: the
// server jars come from Maven Central through scripts/setup/kafka-tools.sh (the kafka_2.13 and
// kafka-tools jars with their dependencies, cached in the gitignored .cache/kafka-tools). Each
// node is broker and controller in one JVM (Kafka's combined mode: 3 JVMs, the smallest KRaft
// cluster with a 3-voter quorum; tern runs 3 controllers, 3 brokers and 3 coordinators as 9
// processes). Settings as tern's bench topics: RF 3, min.insync.replicas=2, Kafka's default flush
// policy (no fsync per write; a topic with flush.messages=1 fsyncs every write).
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { closeSync, mkdirSync, openSync, readdirSync, writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { until } from "../../libs/common/poll.js";

export const KAFKA_NODES = [1, 2, 3] as const;
/** What Kafka's bin/kafka-server-start.sh and kafka-run-class.sh give the server JVM by default. */
const JVM_OPTIONS = [
  "-Xmx1G",
  "-Xms1G",
  "-server",
  "-XX:+UseG1GC",
  "-XX:MaxGCPauseMillis=20",
  "-XX:InitiatingHeapOccupancyPercent=35",
  "-XX:+ExplicitGCInvokesConcurrent",
  "-XX:MaxInlineLevel=15",
  "-Djava.awt.headless=true",
];
const READY_TIMEOUT_MS = 120_000;
const STOP_TIMEOUT_MS = 30_000;

export interface ApacheKafkaOptions {
  /** Data and logs of the three nodes (node N in DIR/N, its output in DIR/N.log). */
  readonly dir: string;
  /** Node N listens on basePort + 2(N-1) (clients) and the next port (its controller). */
  readonly basePort: number;
}

/** The classpath of Kafka's jars (fetched once), or an Error saying what is missing. */
export function apacheKafkaClasspath(): string | Error {
  const script = fileURLToPath(new URL("../../../scripts/setup/kafka-tools.sh", import.meta.url));
  const r = spawnSync("bash", [script], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  if (r.status !== 0) return new Error(`scripts/setup/kafka-tools.sh exited ${r.status}`);
  return r.stdout.trim();
}

export class ApacheKafkaCluster {
  private readonly children = new Map<number, ChildProcess>();

  private constructor(
    private readonly options: ApacheKafkaOptions,
    private readonly classpath: string,
    readonly version: string,
  ) {}

  /** Formats the three nodes' storage and starts them; resolves once every broker port accepts. */
  static async start(options: ApacheKafkaOptions, classpath: string): Promise<ApacheKafkaCluster> {
    const libDir = classpath.replace(/\/\*$/, "");
    const jar = readdirSync(libDir).find((f) => /^kafka_2\.13-[\d.]+\.jar$/.test(f));
    const version = jar?.slice("kafka_2.13-".length, -".jar".length) ?? "unknown";
    const cluster = new ApacheKafkaCluster(options, classpath, version);
    const clusterId = cluster.tool(["kafka.tools.StorageTool", "random-uuid"]).trim();
    for (const node of KAFKA_NODES) {
      mkdirSync(join(options.dir, String(node)), { recursive: true });
      writeFileSync(cluster.configFile(node), cluster.config(node));
      cluster.tool([
        "kafka.tools.StorageTool",
        "format",
        "-t",
        clusterId,
        "-c",
        cluster.configFile(node),
      ]);
    }
    for (const node of KAFKA_NODES) cluster.startNode(node);
    await Promise.all(KAFKA_NODES.map((n) => cluster.waitForPort(cluster.brokerPort(n))));
    return cluster;
  }

  get bootstrap(): string {
    return KAFKA_NODES.map((n) => `127.0.0.1:${this.brokerPort(n)}`).join(",");
  }

  brokerPort(node: number): number {
    return this.options.basePort + 2 * (node - 1);
  }

  pid(node: number): number | undefined {
    const c = this.children.get(node);
    return c && c.exitCode === null && c.signalCode === null ? c.pid : undefined;
  }

  pids(): number[] {
    return KAFKA_NODES.flatMap((n) => this.pid(n) ?? []);
  }

  kill(node: number): void {
    this.children.get(node)?.kill("SIGKILL");
  }

  /** Starts a node again on its data (after kill); resolves once its broker port accepts. */
  async restart(node: number): Promise<void> {
    await this.exited(node, STOP_TIMEOUT_MS);
    this.startNode(node);
    await this.waitForPort(this.brokerPort(node));
  }

  async stop(): Promise<void> {
    for (const c of this.children.values()) c.kill("SIGTERM");
    await Promise.all(
      KAFKA_NODES.map(async (n) => {
        if (!(await this.exited(n, STOP_TIMEOUT_MS))) this.kill(n);
      }),
    );
  }

  private startNode(node: number): void {
    const log = openSync(join(this.options.dir, `${node}.log`), "a");
    const child = spawn(
      "java",
      [
        ...JVM_OPTIONS,
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-cp",
        this.classpath,
        "kafka.Kafka",
        this.configFile(node),
      ],
      { stdio: ["ignore", log, log] },
    );
    closeSync(log);
    this.children.set(node, child);
  }

  private exited(node: number, timeoutMs: number): Promise<boolean> {
    const c = this.children.get(node);
    if (!c || c.exitCode !== null || c.signalCode !== null) return Promise.resolve(true);
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve(false), timeoutMs);
      c.once("exit", () => {
        clearTimeout(t);
        resolve(true);
      });
    });
  }

  private configFile(node: number): string {
    return join(this.options.dir, `${node}.properties`);
  }

  private config(node: number): string {
    const voters = KAFKA_NODES.map((n) => `${n}@127.0.0.1:${this.brokerPort(n) + 1}`).join(",");
    const port = this.brokerPort(node);
    return [
      "process.roles=broker,controller",
      `node.id=${node}`,
      `controller.quorum.voters=${voters}`,
      `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${port + 1}`,
      `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
      "controller.listener.names=CONTROLLER",
      "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
      "inter.broker.listener.name=PLAINTEXT",
      `log.dirs=${join(this.options.dir, String(node))}`,
      "default.replication.factor=3",
      "min.insync.replicas=2",
      "offsets.topic.replication.factor=3",
      "transaction.state.log.replication.factor=3",
      "transaction.state.log.min.isr=2",
      "group.initial.rebalance.delay.ms=0",
      // The bench's read-back reads what it wrote: keep it (tern's bench topics keep 1 GiB too).
      "log.retention.bytes=-1",
      "",
    ].join("\n");
  }

  private tool(args: string[]): string {
    const r = spawnSync("java", ["-cp", this.classpath, ...args], { encoding: "utf8" });
    if (r.status !== 0) throw new Error(`kafka ${args[0]} exited ${r.status}: ${r.stderr}`);
    return (
      r.stdout
        .split("\n")
        .filter((l) => l.trim().length > 0)
        .pop() ?? ""
    );
  }

  private async waitForPort(port: number): Promise<void> {
    await until(
      `Apache Kafka's port ${port}`,
      READY_TIMEOUT_MS,
      () =>
        new Promise<true | undefined>((resolve) => {
          const socket = connect({ host: "127.0.0.1", port }, () => {
            socket.destroy();
            resolve(true);
          });
          socket.on("error", () => resolve(undefined));
        }),
    );
  }
}

// One fuzz run against a running cluster (docs/security.md, "Hostile clients"): for a bounded
// time, workers send random and mutated Kafka frames (every API and version served) to every
// broker's and coordinator's Kafka listener, and random and mutated gRPC messages to every
// method of every service at their gRPC addresses, all from one seed. Then the run checks that
// every process is still up and serves: health SERVING, Metadata answered on every Kafka
// listener, and a Produce then a Fetch of that record through a broker.
import { until } from "../../libs/common/poll.js";
import { KafkaWriter } from "../../libs/records/kafka-codec.js";
import { encodeBatch } from "../../services/kafka/record-batch.js";
import { API } from "../../services/kafka/api-versions.js";
import type { ProcessCluster } from "../cluster/process-cluster.js";
import { GrpcCaller, ternMethods } from "./grpc-messages.js";
import { KafkaFrameSource, sampleBatches } from "./kafka-frames.js";
import { KafkaProbe, requestFrame, type KafkaAnswer } from "./kafka-probe.js";
import { SeededRandom } from "./seeded-random.js";

export interface FuzzOptions {
  readonly seconds: number;
  readonly seed: number;
  /** Progress lines (the seed first). */
  readonly log: (line: string) => void;
}

export interface FuzzReport {
  readonly seed: number;
  readonly kafkaFrames: number;
  readonly grpcCalls: number;
  /** Empty when every process is up and serves; otherwise what is wrong. */
  readonly problems: string[];
}

/** The cluster a fuzz run starts (npm run fuzz and the test alike): one process of each role. */
export const FUZZ_CLUSTER_SHAPE = { controllers: 1, brokers: 1, coordinators: 1 };
export const FUZZ_CLUSTER_ENV = {
  TERN_LOG_LEVEL: "warn",
  TERN_TXN_STATE_PARTITIONS: "2",
  TERN_TXN_STATE_REPLICATION_FACTOR: "1",
  TERN_OFFSETS_PARTITIONS: "2",
};

/** The topic the fuzzer names in its requests (it may delete and create it again). */
const TOPIC = "fuzz";
/** The topic of the final check, which the fuzzer never names. */
const CHECK_TOPIC = "check";
const KAFKA_WORKERS_PER_LISTENER = 2;
const GRPC_WORKERS_PER_PROCESS = 1;
const BURST_MAX = 8;
const QUIET_MS = 150;
const SERVE_WAIT_MS = 60_000;
const NONE = 0;
const TOPIC_ALREADY_EXISTS = 36;

export async function fuzzCluster(
  cluster: ProcessCluster,
  options: FuzzOptions,
): Promise<FuzzReport> {
  const { seed, log } = options;
  log(`fuzz seed ${seed} (reproduce: npm run fuzz -- --seed ${seed} --seconds ${options.seconds})`);
  const targets = cluster.processes().filter((p) => p.role !== "controller");
  const brokerPort = targets.find((p) => p.role === "broker")!.kafkaPort!;
  await createTopic(brokerPort, TOPIC);
  await createTopic(brokerPort, CHECK_TOPIC);
  await until("a first Produce then Fetch on the check topic", SERVE_WAIT_MS, () =>
    servedRecord(brokerPort),
  );

  const root = new SeededRandom(seed);
  const batches = await sampleBatches();
  const methods = ternMethods();
  const deadline = Date.now() + options.seconds * 1_000;
  let kafkaFrames = 0;
  let grpcCalls = 0;
  const workers: Promise<void>[] = [];
  for (const t of targets) {
    for (let i = 0; i < KAFKA_WORKERS_PER_LISTENER; i++) {
      const rng = root.fork();
      const frames = new KafkaFrameSource(rng, batches, TOPIC);
      workers.push(
        (async () => {
          while (Date.now() < deadline) kafkaFrames += await kafkaBurst(t.kafkaPort!, rng, frames);
        })(),
      );
    }
    for (let i = 0; i < GRPC_WORKERS_PER_PROCESS; i++) {
      const caller = new GrpcCaller(t.address, root.fork(), methods);
      workers.push(
        (async () => {
          try {
            while (Date.now() < deadline) {
              await caller.callOnce();
              grpcCalls++;
            }
          } finally {
            caller.close();
          }
        })(),
      );
    }
  }
  await Promise.all(workers);
  log(
    `sent ${kafkaFrames} Kafka frames and ${grpcCalls} gRPC calls; checking every process serves`,
  );
  const problems = await servingProblems(cluster, brokerPort);
  return { seed, kafkaFrames, grpcCalls, problems };
}

/** One connection: a burst of frames, then whatever answers come until it closes or goes quiet. */
async function kafkaBurst(
  port: number,
  rng: SeededRandom,
  frames: KafkaFrameSource,
): Promise<number> {
  let probe: KafkaProbe;
  try {
    probe = await KafkaProbe.open(port);
  } catch {
    // A listener that refuses connections shows in the final check; do not spin.
    await new Promise((r) => setTimeout(r, 100));
    return 0;
  }
  const n = 1 + rng.int(BURST_MAX);
  try {
    for (let i = 0; i < n; i++) probe.write(frames.next());
    for (let i = 0; i < n; i++) if ((await probe.next(QUIET_MS)) === undefined) break;
  } finally {
    probe.close();
  }
  return n;
}

async function servingProblems(cluster: ProcessCluster, brokerPort: number): Promise<string[]> {
  const dead = cluster.processes().filter((p) => !p.alive);
  if (dead.length > 0)
    return dead.map((p) => `${p.role} ${p.id} is not running (exit ${String(p.exit)})`);
  const problems: string[] = [];
  try {
    await until("every process SERVING", SERVE_WAIT_MS, async () =>
      (await cluster.health()).every((h) => h.health === "SERVING") ? true : undefined,
    );
  } catch (e) {
    problems.push((e as Error).message);
  }
  for (const p of cluster.processes().filter((x) => x.kafkaPort !== undefined)) {
    try {
      await until(`Metadata from ${p.role} ${p.id}`, SERVE_WAIT_MS, () =>
        metadataAnswered(p.kafkaPort!),
      );
    } catch (e) {
      problems.push((e as Error).message);
    }
  }
  try {
    await until("a Produce then a Fetch of that record", SERVE_WAIT_MS, () =>
      servedRecord(brokerPort),
    );
  } catch (e) {
    problems.push((e as Error).message);
  }
  return problems;
}

async function call(port: number, frame: Buffer): Promise<KafkaAnswer> {
  const probe = await KafkaProbe.open(port);
  try {
    probe.write(frame);
    const a = await probe.next(10_000);
    if (a === undefined) throw new Error(`no answer from port ${port}`);
    return a;
  } finally {
    probe.close();
  }
}

async function metadataAnswered(port: number): Promise<true | undefined> {
  const body = new KafkaWriter(8).int32(-1).finish();
  const a = await call(port, requestFrame(API.Metadata, 1, 7, Buffer.from(body), false));
  return a.correlationId === 7 ? true : undefined;
}

async function createTopic(port: number, topic: string): Promise<void> {
  const w = new KafkaWriter(64);
  w.int32(1).string(topic).int32(1).int16(1).int32(0).int32(0); // no assignments, no configs
  w.int32(10_000);
  await until(`topic ${topic}`, SERVE_WAIT_MS, async () => {
    const a = await call(
      port,
      requestFrame(API.CreateTopics, 0, 1, Buffer.from(w.finish()), false),
    );
    a.body.int32(); // topics
    a.body.string();
    const code = a.body.int16();
    return code === NONE || code === TOPIC_ALREADY_EXISTS ? true : undefined;
  });
}

/** true once a record produced is fetched back; throws what failed (until() reports the last). */
async function servedRecord(port: number): Promise<true> {
  const problem = await produceAndFetch(port);
  if (problem !== undefined) throw new Error(problem);
  return true;
}

/** undefined when a record produced to the check topic is fetched back; else what failed. */
async function produceAndFetch(port: number): Promise<string | undefined> {
  const value = `alive-${Date.now()}`;
  const produce = new KafkaWriter(256);
  produce.nullableString(null).int16(-1).int32(10_000);
  produce.int32(1).string(CHECK_TOPIC).int32(1).int32(0).nullableBytes(recordBatchOf(value));
  const p = await call(port, requestFrame(API.Produce, 3, 1, Buffer.from(produce.finish()), false));
  p.body.int32();
  p.body.string();
  p.body.int32();
  p.body.int32();
  const code = p.body.int16();
  const offset = p.body.int64();
  if (code !== NONE) return `Produce answered error ${code}`;
  const fetch = new KafkaWriter(128);
  fetch
    .int32(-1)
    .int32(0)
    .int32(1)
    .int32(1024 * 1024)
    .int8(0);
  fetch
    .int32(1)
    .string(CHECK_TOPIC)
    .int32(1)
    .int32(0)
    .int64(offset)
    .int32(1024 * 1024);
  const f = await call(port, requestFrame(API.Fetch, 4, 2, Buffer.from(fetch.finish()), false));
  f.body.int32(); // throttle
  f.body.int32(); // topics
  f.body.string();
  f.body.int32(); // partitions
  f.body.int32();
  const fetchCode = f.body.int16();
  if (fetchCode !== NONE) return `Fetch answered error ${fetchCode}`;
  f.body.int64(); // high watermark
  f.body.int64(); // last stable offset
  f.body.array((x) => [x.int64(), x.int64()]); // aborted transactions
  const records = f.body.nullableBytes();
  if (records === null || !records.includes(Buffer.from(value)))
    return `Fetch at offset ${offset} did not return the record just produced`;
  return undefined;
}

/** A batch of one record with this value. */
function recordBatchOf(value: string): Buffer {
  const w = new KafkaWriter(128);
  encodeBatch(w, {
    baseOffset: 0n,
    producerId: -1n,
    producerEpoch: -1,
    baseSequence: -1,
    isTransactional: false,
    records: [{ key: null, value: Buffer.from(value), headers: [], timestampMs: Date.now() }],
  });
  return Buffer.from(w.finish());
}

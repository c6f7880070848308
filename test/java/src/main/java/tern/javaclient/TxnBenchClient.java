package tern.javaclient;

import java.util.Arrays;
import java.util.Properties;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * The transactions half of `npm run bench -- kafka-peer`: one producer (acks=all, idempotent)
 * sends RECORD_BYTES values round-robin over the partitions for DURATION_S seconds with at most
 * WINDOW records unacknowledged. With COMMIT_INTERVAL_MS > 0 it is transactional and commits
 * every COMMIT_INTERVAL_MS (commitTransaction waits for every record of the transaction and the
 * coordinator's answer, as an application's commit does); with 0 it is the idempotent baseline.
 * Prints one JSON object: records produced, seconds, commits, commit latency p50/p99 (ms), the
 * JVM's CPU. Args: bootstrap topic partitions durationS recordBytes window lingerMs batchBytes
 * commitIntervalMs transactionalId.
 */
public final class TxnBenchClient {
  private static final int COMMITS_MAX = 1_000_000;

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String topic = args[1];
    int partitions = Integer.parseInt(args[2]);
    double durationS = Double.parseDouble(args[3]);
    int size = Integer.parseInt(args[4]);
    int window = Integer.parseInt(args[5]);
    int lingerMs = Integer.parseInt(args[6]);
    int batchBytes = Integer.parseInt(args[7]);
    long commitIntervalMs = Long.parseLong(args[8]);
    String transactionalId = args[9];
    boolean transactional = commitIntervalMs > 0;
    byte[] value = new byte[size];
    Arrays.fill(value, (byte) 'x');

    Properties p = BenchConfig.producer(bootstrap, lingerMs, batchBytes, 60_000);
    if (transactional) {
      p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
      p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "60000");
    }

    Semaphore inFlight = new Semaphore(window);
    AtomicLong produced = new AtomicLong();
    AtomicLong failed = new AtomicLong();
    long[] commitNs = new long[COMMITS_MAX];
    int commits = 0;
    long cpu0;
    long start;
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
      if (transactional) {
        producer.initTransactions();
        producer.beginTransaction();
      }
      // The first send carries the metadata fetch: not in the measured window.
      producer.send(new ProducerRecord<>(topic, 0, null, value)).get();
      cpu0 = BenchConfig.jvmCpuMs();
      start = System.nanoTime();
      long end = start + (long) (durationS * 1e9);
      long nextCommit = start + commitIntervalMs * 1_000_000;
      long i = 0;
      while (System.nanoTime() < end) {
        if (transactional && System.nanoTime() >= nextCommit) {
          long t0 = System.nanoTime();
          producer.commitTransaction();
          if (commits < COMMITS_MAX) commitNs[commits++] = System.nanoTime() - t0;
          producer.beginTransaction();
          nextCommit = System.nanoTime() + commitIntervalMs * 1_000_000;
        }
        if (!inFlight.tryAcquire(1, TimeUnit.MILLISECONDS)) continue;
        producer.send(
            new ProducerRecord<>(topic, (int) (i++ % partitions), null, value),
            (metadata, error) -> {
              inFlight.release();
              if (error != null) failed.incrementAndGet();
              else produced.incrementAndGet();
            });
      }
      if (transactional) {
        long t0 = System.nanoTime();
        producer.commitTransaction();
        if (commits < COMMITS_MAX) commitNs[commits++] = System.nanoTime() - t0;
      } else {
        producer.flush();
      }
    }
    double produceS = (System.nanoTime() - start) / 1e9;
    long cpu = BenchConfig.jvmCpuMs() - cpu0;
    long[] sorted = Arrays.copyOf(commitNs, commits);
    Arrays.sort(sorted);
    Json.emit(
        "produced", produced.get(),
        "failed", failed.get(),
        "produceS", produceS,
        "commits", commits,
        "commitP50", BenchConfig.percentileMs(sorted, 50),
        "commitP99", BenchConfig.percentileMs(sorted, 99),
        "clientCpuMs", cpu);
  }


}

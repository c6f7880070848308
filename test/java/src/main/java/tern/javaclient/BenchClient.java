package tern.javaclient;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The Java-client half of `npm run bench -- kafka`, the same workload as
 * scripts/bench/kafka-librdkafka-client.py: an idempotent producer (acks=all) sends RECORD_BYTES
 * values round-robin over the partitions for DURATION_S seconds, at most WINDOW records sent and
 * not yet acknowledged; then a consumer reads every partition back from offset 0. Prints one JSON
 * object: records produced, seconds, delivery latency p50/p99 (send() to acknowledgement, ms),
 * records and bytes fetched, fetch seconds, and the JVM's CPU while producing and reading back.
 * Args: bootstrap topic partitions durationS recordBytes window lingerMs batchBytes.
 */
public final class BenchClient {
  private static final long FETCH_TIMEOUT_MS = 120_000;
  private static final int LATENCIES_MAX = 5_000_000;

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String topic = args[1];
    int partitions = Integer.parseInt(args[2]);
    double durationS = Double.parseDouble(args[3]);
    int size = Integer.parseInt(args[4]);
    int window = Integer.parseInt(args[5]);
    int lingerMs = Integer.parseInt(args[6]);
    int batchBytes = Integer.parseInt(args[7]);
    byte[] value = new byte[size];
    Arrays.fill(value, (byte) 'x');

    Properties p = BenchConfig.producer(bootstrap, lingerMs, batchBytes, 60_000);

    Semaphore inFlight = new Semaphore(window);
    AtomicLong produced = new AtomicLong();
    AtomicLong failed = new AtomicLong();
    long[] latenciesNs = new long[LATENCIES_MAX];
    AtomicLong latencyCount = new AtomicLong();
    long cpu0 = BenchConfig.jvmCpuMs();
    long start = System.nanoTime();
    long end = start + (long) (durationS * 1e9);
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
      long i = 0;
      while (System.nanoTime() < end) {
        if (!inFlight.tryAcquire(5, TimeUnit.MILLISECONDS)) continue;
        long t0 = System.nanoTime();
        producer.send(
            new ProducerRecord<>(topic, (int) (i++ % partitions), null, value),
            (metadata, error) -> {
              inFlight.release();
              if (error != null) {
                failed.incrementAndGet();
                return;
              }
              produced.incrementAndGet();
              long n = latencyCount.getAndIncrement();
              if (n < LATENCIES_MAX) latenciesNs[(int) n] = System.nanoTime() - t0;
            });
      }
      producer.flush();
    }
    double produceS = (System.nanoTime() - start) / 1e9;
    long produceCpu = BenchConfig.jvmCpuMs() - cpu0;

    Properties c = new Properties();
    c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    c.put(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, String.valueOf(16 * 1024 * 1024));
    c.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, String.valueOf(4 * 1024 * 1024));
    c.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "10000");
    long fetchedRecords = 0;
    long fetchedBytes = 0;
    long fetchStart = System.nanoTime();
    long fetchCpu0 = BenchConfig.jvmCpuMs();
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c)) {
      List<TopicPartition> tps = new ArrayList<>();
      for (int i = 0; i < partitions; i++) tps.add(new TopicPartition(topic, i));
      consumer.assign(tps);
      consumer.seekToBeginning(tps);
      long deadline = fetchStart + FETCH_TIMEOUT_MS * 1_000_000;
      while (fetchedRecords < produced.get() && System.nanoTime() < deadline) {
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofSeconds(1))) {
          fetchedRecords++;
          fetchedBytes += r.value() == null ? 0 : r.value().length;
        }
      }
    }
    double fetchS = (System.nanoTime() - fetchStart) / 1e9;
    long fetchCpu = BenchConfig.jvmCpuMs() - fetchCpu0;

    int n = (int) Math.min(latencyCount.get(), LATENCIES_MAX);
    long[] sorted = Arrays.copyOf(latenciesNs, n);
    Arrays.sort(sorted);
    Json.emit(
        "produced", produced.get(),
        "failed", failed.get(),
        "produceS", produceS,
        "p50", BenchConfig.percentileMs(sorted, 50),
        "p99", BenchConfig.percentileMs(sorted, 99),
        "fetchedRecords", fetchedRecords,
        "fetchedBytes", fetchedBytes,
        "fetchS", fetchS,
        "produceCpuMs", produceCpu,
        "fetchCpuMs", fetchCpu);
  }


}

package tern.javaclient;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * The read-back half of `npm run bench -- kafka-peer`.
 * `fill bootstrap topic partitions records recordBytes window`: an idempotent producer (acks=all)
 * writes RECORDS values round-robin over the partitions as fast as WINDOW unacknowledged records
 * allow; prints {produced, failed, produceS}.
 * `read bootstrap topic partitions records isolation`: a consumer (no group) reads every
 * partition from offset 0 until RECORDS records arrived (or READ_TIMEOUT_MS), at isolation
 * read_committed or read_uncommitted; prints {fetchedRecords, fetchedBytes, fetchS, clientCpuMs}.
 */
public final class ReadBackClient {
  private static final long READ_TIMEOUT_MS = 300_000;

  public static void main(String[] args) throws Exception {
    if (args[0].equals("fill")) fill(args);
    else read(args);
  }

  private static void fill(String[] args) throws Exception {
    String topic = args[2];
    int partitions = Integer.parseInt(args[3]);
    long records = Long.parseLong(args[4]);
    byte[] value = new byte[Integer.parseInt(args[5])];
    Arrays.fill(value, (byte) 'x');
    Semaphore window = new Semaphore(Integer.parseInt(args[6]));
    Properties p = BenchConfig.producer(args[1], 5, 64 * 1024, 120_000);
    AtomicLong produced = new AtomicLong();
    AtomicLong failed = new AtomicLong();
    long start = System.nanoTime();
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
      for (long i = 0; i < records; i++) {
        window.acquire();
        producer.send(
            new ProducerRecord<>(topic, (int) (i % partitions), null, value),
            (metadata, error) -> {
              window.release();
              if (error != null) failed.incrementAndGet();
              else produced.incrementAndGet();
            });
      }
      producer.flush();
    }
    Json.emit(
        "produced", produced.get(),
        "failed", failed.get(),
        "produceS", (System.nanoTime() - start) / 1e9);
  }

  private static void read(String[] args) {
    String topic = args[2];
    int partitions = Integer.parseInt(args[3]);
    long records = Long.parseLong(args[4]);
    Properties c = new Properties();
    c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, args[1]);
    c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, args[5]);
    c.put(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, String.valueOf(16 * 1024 * 1024));
    c.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, String.valueOf(4 * 1024 * 1024));
    c.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "10000");
    long fetchedRecords = 0;
    long fetchedBytes = 0;
    long start = System.nanoTime();
    long cpu0 = BenchConfig.jvmCpuMs();
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c)) {
      List<TopicPartition> tps = new ArrayList<>();
      for (int i = 0; i < partitions; i++) tps.add(new TopicPartition(topic, i));
      consumer.assign(tps);
      consumer.seekToBeginning(tps);
      long deadline = start + READ_TIMEOUT_MS * 1_000_000;
      while (fetchedRecords < records && System.nanoTime() < deadline) {
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofSeconds(1))) {
          fetchedRecords++;
          fetchedBytes += r.value() == null ? 0 : r.value().length;
        }
      }
    }
    Json.emit(
        "fetchedRecords", fetchedRecords,
        "fetchedBytes", fetchedBytes,
        "fetchS", (System.nanoTime() - start) / 1e9,
        "clientCpuMs", BenchConfig.jvmCpuMs() - cpu0);
  }

}

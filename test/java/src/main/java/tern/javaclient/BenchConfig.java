package tern.javaclient;

import java.lang.management.ManagementFactory;
import java.util.Properties;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/** What the benchmark programs share: their producer, the JVM's CPU, percentiles. */
final class BenchConfig {
  private BenchConfig() {}

  /** An idempotent producer of byte arrays, acks=all (batchBytes 0: Kafka's default batch.size). */
  static Properties producer(String bootstrap, int lingerMs, int batchBytes, int deliveryTimeoutMs) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.LINGER_MS_CONFIG, String.valueOf(lingerMs));
    if (batchBytes > 0) p.put(ProducerConfig.BATCH_SIZE_CONFIG, String.valueOf(batchBytes));
    p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, String.valueOf(deliveryTimeoutMs));
    p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "30000");
    return p;
  }

  /** The JVM's CPU in ms (every thread: the client's sender and fetch threads too). */
  static long jvmCpuMs() {
    return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
            .getProcessCpuTime()
        / 1_000_000;
  }

  /** The p-th percentile of sorted nanoseconds, in ms (0 for none). */
  static double percentileMs(long[] sorted, int p) {
    if (sorted.length == 0) return 0;
    return sorted[Math.min(sorted.length - 1, (int) (p / 100.0 * sorted.length))] / 1e6;
  }
}

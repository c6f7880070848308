package tern.javaclient;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * The failover half of `npm run bench -- kafka-peer`: one idempotent producer (acks=all) writes
 * one RECORD_BYTES record at a time to one partition for DURATION_S seconds, each send waiting
 * for its acknowledgement, while the bench SIGKILLs that partition's leader. Prints "ready" once
 * the first write is acknowledged, then at the end one JSON object: writes acknowledged and
 * failed, and every pause between two acknowledgements longer than GAP_MS as [from, to] in epoch
 * ms, from which the bench reads the time from the kill to the next acknowledged write.
 * Args: bootstrap topic partition durationS recordBytes.
 */
public final class FailoverClient {
  private static final long GAP_MS = 50;
  private static final int GAPS_MAX = 10_000;

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String topic = args[1];
    int partition = Integer.parseInt(args[2]);
    double durationS = Double.parseDouble(args[3]);
    byte[] value = new byte[Integer.parseInt(args[4])];
    Arrays.fill(value, (byte) 'x');

    Properties p = BenchConfig.producer(bootstrap, 0, 0, 120_000);
    long acked = 0;
    long failed = 0;
    List<List<Long>> gaps = new ArrayList<>();
    long end = System.nanoTime() + (long) (durationS * 1e9);
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
      producer.send(new ProducerRecord<>(topic, partition, null, value)).get();
      System.out.println("ready");
      System.out.flush();
      long lastAck = System.currentTimeMillis();
      while (System.nanoTime() < end) {
        try {
          producer
              .send(new ProducerRecord<>(topic, partition, null, value))
              .get(150, TimeUnit.SECONDS);
          acked++;
          long now = System.currentTimeMillis();
          if (now - lastAck > GAP_MS && gaps.size() < GAPS_MAX) gaps.add(List.of(lastAck, now));
          lastAck = now;
        } catch (ExecutionException | TimeoutException e) {
          failed++;
        }
      }
    }
    Json.emit("acked", acked, "failed", failed, "gaps", gaps);
  }
}

package tern.javaclient;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;

/**
 * Sends `count` records (key k-i, value PREFIX-i) with an idempotent producer (acks=all) and
 * waits for every acknowledgement. Args: bootstrap topic count prefix. Prints
 * {"event":"produced","count":n,"partitions":{...}} or {"event":"error",...}.
 */
public final class IdempotentProducer {
  public static void main(String[] args) {
    String bootstrap = args[0];
    String topic = args[1];
    int count = Integer.parseInt(args[2]);
    String prefix = args[3];
    try (KafkaProducer<String, String> producer =
        new KafkaProducer<>(ClientConfig.producer(bootstrap, null))) {
      List<Future<RecordMetadata>> acks = new ArrayList<>(count);
      for (int i = 0; i < count; i++)
        acks.add(producer.send(new ProducerRecord<>(topic, "k-" + i, prefix + "-" + i)));
      producer.flush();
      java.util.TreeMap<Integer, Integer> perPartition = new java.util.TreeMap<>();
      for (Future<RecordMetadata> f : acks) perPartition.merge(f.get().partition(), 1, Integer::sum);
      Json.emit("event", "produced", "count", acks.size(), "partitions", perPartition);
    } catch (Exception e) {
      Json.fail("error", e);
    }
  }
}

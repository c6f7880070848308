package tern.javaclient;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;

/**
 * Reads a topic under read_committed until at least `expected` records came and every
 * partition's position reached its end offset (the last stable offset), or the time is up.
 * With a group id it subscribes (a classic group) and commits its positions at the end;
 * with "-" it assigns every partition. Args: bootstrap topic expected timeoutMs groupId|-
 * [classic|consumer] (the group protocol; classic by default).
 * Prints {"event":"read","count":n,"values":[...],"timedOut":bool}.
 */
public final class ReadCommitted {
  public static void main(String[] args) {
    String bootstrap = args[0];
    String topic = args[1];
    int expected = Integer.parseInt(args[2]);
    long deadline = System.currentTimeMillis() + Long.parseLong(args[3]);
    String groupId = args[4].equals("-") ? null : args[4];
    String protocol = args.length > 5 ? args[5] : "classic";
    try (KafkaConsumer<String, String> consumer =
        new KafkaConsumer<>(ClientConfig.consumer(bootstrap, groupId, protocol))) {
      if (groupId != null) {
        consumer.subscribe(List.of(topic));
      } else {
        consumer.assign(
            consumer.partitionsFor(topic).stream()
                .map(p -> new TopicPartition(topic, p.partition()))
                .toList());
      }
      List<String> values = new ArrayList<>();
      boolean done = false;
      while (!done && System.currentTimeMillis() < deadline) {
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200)))
          values.add(r.value());
        Set<TopicPartition> assigned = consumer.assignment();
        if (values.size() >= expected && !assigned.isEmpty()) {
          Map<TopicPartition, Long> ends = consumer.endOffsets(assigned);
          done = assigned.stream().allMatch(tp -> consumer.position(tp) >= ends.get(tp));
        }
      }
      if (groupId != null && done) consumer.commitSync();
      Json.emit("event", "read", "count", values.size(), "values", values, "timedOut", !done);
    } catch (Exception e) {
      Json.fail("error", e);
    }
  }
}

package tern.javaclient;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;

/**
 * One member of a consumer group (read_committed) polling a topic for a fixed time, committing
 * what it read after every poll, so members that share the group split its partitions. Args:
 * bootstrap topic groupId protocol(classic|consumer) runMs. Prints
 * {"event":"member","assigned":[partitions at the end],"values":[...]}.
 */
public final class GroupMember {
  public static void main(String[] args) {
    String bootstrap = args[0];
    String topic = args[1];
    String groupId = args[2];
    String protocol = args[3];
    long deadline = System.currentTimeMillis() + Long.parseLong(args[4]);
    try (KafkaConsumer<String, String> consumer =
        new KafkaConsumer<>(ClientConfig.consumer(bootstrap, groupId, protocol))) {
      consumer.subscribe(List.of(topic));
      List<String> values = new ArrayList<>();
      while (System.currentTimeMillis() < deadline) {
        int n = 0;
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
          values.add(r.value());
          n++;
        }
        if (n > 0) consumer.commitSync();
      }
      TreeSet<Integer> assigned = new TreeSet<>();
      for (TopicPartition tp : consumer.assignment()) assigned.add(tp.partition());
      Json.emit("event", "member", "assigned", new ArrayList<>(assigned), "values", values);
    } catch (Exception e) {
      Json.fail("error", e);
    }
  }
}

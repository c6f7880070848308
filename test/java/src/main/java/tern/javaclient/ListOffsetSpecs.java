package tern.javaclient;

import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * Writes records with the given timestamps to partition 0 of a topic (an idempotent producer),
 * then asks the Admin client's listOffsets for that partition by every offset spec that needs
 * ListOffsets v7 to v9 besides the classic ones. Args: bootstrap topic timestampMs...
 * Prints {"event":"offset","spec":name,"offset":n,"timestamp":t} per spec, or
 * {"event":"error",...}.
 */
public final class ListOffsetSpecs {
  public static void main(String[] args) {
    String bootstrap = args[0];
    String topic = args[1];
    TopicPartition tp = new TopicPartition(topic, 0);
    try (KafkaProducer<String, String> producer =
        new KafkaProducer<>(ClientConfig.producer(bootstrap, null))) {
      for (int i = 2; i < args.length; i++)
        producer.send(
            new ProducerRecord<>(topic, 0, Long.parseLong(args[i]), "k", "t-" + (i - 2)));
      producer.flush();
    } catch (Exception e) {
      Json.fail("error", e);
      return;
    }
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "60000");
    try (Admin admin = Admin.create(p)) {
      Map<String, OffsetSpec> specs =
          Map.of(
              "earliest", OffsetSpec.earliest(),
              "latest", OffsetSpec.latest(),
              "maxTimestamp", OffsetSpec.maxTimestamp(),
              "earliestLocal", OffsetSpec.earliestLocal(),
              "latestTiered", OffsetSpec.latestTiered());
      for (String name :
          List.of("earliest", "latest", "maxTimestamp", "earliestLocal", "latestTiered")) {
        ListOffsetsResultInfo info =
            admin.listOffsets(Map.of(tp, specs.get(name))).partitionResult(tp).get();
        Json.emit(
            "event", "offset", "spec", name, "offset", info.offset(), "timestamp", info.timestamp());
      }
    } catch (Exception e) {
      Json.fail("error", e);
    }
  }
}

package tern.javaclient;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartitionInfo;

/**
 * The admin half of `npm run bench -- kafka-peer`, the same calls against both systems through
 * Kafka's Admin client.
 * `create bootstrap topic partitions rf [key=value ...]`: CreateTopics, then describeTopics
 * every POLL_MS until every partition has a leader (or TIMEOUT_MS); prints {createMs, leadersMs,
 * leaderless} measured from the CreateTopics call.
 * `leaders bootstrap topic`: prints {leaders: {partition: leader id}} (-1 without one).
 * `quorum-leader bootstrap`: prints {leaderId} of the KRaft metadata quorum (Apache Kafka only).
 * `wait-leaders bootstrap topic deadNode`: describeTopics every POLL_MS until no partition is
 * leaderless or led by DEAD_NODE (or TIMEOUT_MS); prints {doneAt (epoch ms), remaining}.
 */
public final class PeerAdmin {
  private static final long POLL_MS = 200;
  private static final long TIMEOUT_MS = 900_000;

  public static void main(String[] args) throws Exception {
    Properties p = new Properties();
    p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[1]);
    p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "120000");
    p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "300000");
    try (Admin admin = Admin.create(p)) {
      switch (args[0]) {
        case "create" -> create(admin, args);
        case "leaders" -> Json.emit("leaders", leaders(admin, args[2]));
        case "wait-leaders" -> waitLeaders(admin, args[2], Integer.parseInt(args[3]));
        case "quorum-leader" ->
            Json.emit(
                "leaderId",
                admin.describeMetadataQuorum().quorumInfo().get(60, TimeUnit.SECONDS).leaderId());
        default -> throw new IllegalArgumentException("unknown command " + args[0]);
      }
    }
  }

  private static void create(Admin admin, String[] args) throws Exception {
    String topic = args[2];
    Map<String, String> configs = new LinkedHashMap<>();
    for (int i = 5; i < args.length; i++) {
      String[] kv = args[i].split("=", 2);
      configs.put(kv[0], kv[1]);
    }
    NewTopic t =
        new NewTopic(topic, Integer.parseInt(args[3]), Short.parseShort(args[4])).configs(configs);
    long start = System.nanoTime();
    admin.createTopics(List.of(t)).all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
    long createMs = (System.nanoTime() - start) / 1_000_000;
    long deadline = start + TIMEOUT_MS * 1_000_000;
    long leaderless = -1;
    while (System.nanoTime() < deadline) {
      try {
        leaderless = leaders(admin, topic).values().stream().filter(l -> l < 0).count();
        if (leaderless == 0) break;
      } catch (Exception e) {
        // The topic's metadata may not have reached every broker yet: poll again.
      }
      Thread.sleep(POLL_MS);
    }
    Json.emit(
        "createMs", createMs,
        "leadersMs", (System.nanoTime() - start) / 1_000_000,
        "leaderless", leaderless);
  }

  private static void waitLeaders(Admin admin, String topic, int dead) throws Exception {
    long deadline = System.nanoTime() + TIMEOUT_MS * 1_000_000;
    long remaining = -1;
    while (System.nanoTime() < deadline) {
      try {
        remaining =
            leaders(admin, topic).values().stream().filter(l -> l < 0 || l == dead).count();
        if (remaining == 0) break;
      } catch (Exception e) {
        // A describe may fail while leadership moves: poll again.
      }
      Thread.sleep(POLL_MS);
    }
    Json.emit("doneAt", System.currentTimeMillis(), "remaining", remaining);
  }

  private static Map<String, Integer> leaders(Admin admin, String topic) throws Exception {
    TopicDescription d =
        admin.describeTopics(List.of(topic)).allTopicNames().get(120, TimeUnit.SECONDS).get(topic);
    Map<String, Integer> out = new LinkedHashMap<>();
    List<TopicPartitionInfo> ps = new ArrayList<>(d.partitions());
    for (TopicPartitionInfo i : ps)
      out.put(String.valueOf(i.partition()), i.leader() == null ? -1 : i.leader().id());
    return out;
  }
}

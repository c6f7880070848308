package tern.javaclient;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * A Kafka Streams application under processing.guarantee=exactly_once_v2: it counts the input's
 * values (each value is a word; the input's keys are ignored) through a repartition by word
 * (topic APP-by-word-repartition, purged by Streams with DeleteRecords) into a state store
 * "counts" (changelog APP-counts-changelog, compacted) and writes "word=count" to the output
 * for every input record (the store's cache is off, so no update is folded into a later one):
 * exactly once, a word counted n times has outputs word=1 .. word=n, each once. Each count may
 * wait delayMs before it is written, so a run lasts long enough to be killed mid-way (the wait
 * is after the repartition: a consumer fetches no partition from a broker while it holds
 * records of another partition from it, so a slow source task would hold the counts back).
 *
 * <p>A read_committed consumer of the output (in this process, not part of the topology) counts
 * the committed outputs, prints {"event":"progress","outputs":n,"ms":sinceStart} as they grow,
 * and once `expected` came and it reached the output's last stable offset closes the
 * application and prints {"event":"done","outputs":n,"values":[...]} (exit 0; 4 when the time
 * ran out first). Streams' state changes print
 * {"event":"state",...}; an error in a stream thread prints {"event":"error",...} and exits 1.
 * Args: bootstrap input output applicationId stateDir delayMs expected timeoutMs.
 */
public final class StreamsCounter {
  public static void main(String[] args) {
    String bootstrap = args[0];
    String input = args[1];
    String output = args[2];
    String applicationId = args[3];
    String stateDir = args[4];
    long delayMs = Long.parseLong(args[5]);
    int expected = Integer.parseInt(args[6]);
    long started = System.currentTimeMillis();
    long deadline = started + Long.parseLong(args[7]);

    StreamsBuilder builder = new StreamsBuilder();
    builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
        .selectKey((k, word) -> word)
        .groupByKey(Grouped.with("by-word", Serdes.String(), Serdes.String()))
        .count(
            Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("counts")
                .withCachingDisabled())
        .toStream()
        .peek((word, n) -> pause(delayMs))
        .mapValues((word, n) -> word + "=" + n)
        .to(output, Produced.with(Serdes.String(), Serdes.String()));

    Properties config = new Properties();
    config.put(StreamsConfig.APPLICATION_ID_CONFIG, applicationId);
    config.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    config.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    config.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
    config.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
    config.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
    config.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");
    // Purge consumed repartition records (DeleteRecords) within a short run, not every 30 s.
    config.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, "200");
    // Small polls: a commit (a transaction) every few records, so a kill lands mid-transaction.
    config.put(StreamsConfig.consumerPrefix(ConsumerConfig.MAX_POLL_RECORDS_CONFIG), "20");
    // A killed instance's member leaves the group within seconds (tern allows >= 1 s).
    config.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), "6000");
    config.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), "1000");

    KafkaStreams streams = new KafkaStreams(builder.build(), config);
    streams.setStateListener(
        (now, before) -> Json.emit("event", "state", "state", now.name(), "from", before.name()));
    streams.setUncaughtExceptionHandler(
        e -> {
          Json.fail("error", e);
          return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
    streams.start();

    try (KafkaConsumer<String, String> consumer =
        new KafkaConsumer<>(ClientConfig.consumer(bootstrap, null))) {
      List<String> values = new ArrayList<>();
      boolean done = false;
      int reported = 0;
      while (!done && System.currentTimeMillis() < deadline) {
        if (consumer.assignment().isEmpty()) {
          // The output topic exists once the test created it; assign all its partitions.
          consumer.assign(
              consumer.partitionsFor(output).stream()
                  .map(p -> new TopicPartition(output, p.partition()))
                  .toList());
        }
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200)))
          values.add(r.value());
        if (values.size() > reported) {
          reported = values.size();
          Json.emit(
              "event", "progress", "outputs", reported, "ms", System.currentTimeMillis() - started);
        }
        if (values.size() >= expected) {
          Set<TopicPartition> assigned = consumer.assignment();
          Map<TopicPartition, Long> ends = consumer.endOffsets(assigned);
          done = assigned.stream().allMatch(tp -> consumer.position(tp) >= ends.get(tp));
        }
      }
      streams.close(Duration.ofSeconds(30));
      Json.emit(
          "event", "done", "outputs", values.size(), "values", values, "timedOut", !done,
          "state", streams.state().name());
      System.exit(done ? 0 : 4);
    } catch (Exception e) {
      Json.fail("error", e);
    }
  }

  private static void pause(long ms) {
    if (ms <= 0) return;
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}

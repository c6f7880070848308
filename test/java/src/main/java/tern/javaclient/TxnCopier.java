package tern.javaclient;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * The textbook consume-transform-produce loop: a read_committed consumer in a classic group
 * and a transactional producer; every poll's records are copied to the output topic and the
 * consumer's next offsets committed in the same transaction with
 * sendOffsetsToTransaction(offsets, consumer.groupMetadata()) (TxnOffsetCommit v3, KIP-447).
 * Stops once `expected` records were copied, or halts the JVM (no abort, no LeaveGroup) after
 * `haltAfter` committed transactions with the next one's records and offsets sent but not
 * committed (a crash). Args: bootstrap input output groupId transactionalId expected
 * timeoutMs [haltAfter]. Prints {"event":"committed",...} per transaction, then
 * {"event":"copied","count":n,"transactions":t} or {"event":"halting",...}.
 */
public final class TxnCopier {
  public static void main(String[] args) {
    String bootstrap = args[0];
    String input = args[1];
    String output = args[2];
    String groupId = args[3];
    String transactionalId = args[4];
    int expected = Integer.parseInt(args[5]);
    long deadline = System.currentTimeMillis() + Long.parseLong(args[6]);
    int haltAfter = args.length > 7 ? Integer.parseInt(args[7]) : -1;
    Properties consumerConfig = ClientConfig.consumer(bootstrap, groupId);
    consumerConfig.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "50"); // several transactions
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(consumerConfig);
        KafkaProducer<String, String> producer =
            new KafkaProducer<>(ClientConfig.producer(bootstrap, transactionalId))) {
      producer.initTransactions();
      consumer.subscribe(List.of(input));
      int copied = 0;
      int transactions = 0;
      while (copied < expected && System.currentTimeMillis() < deadline) {
        ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
        if (records.isEmpty()) continue;
        producer.beginTransaction();
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (ConsumerRecord<String, String> r : records) {
          producer.send(new ProducerRecord<>(output, r.key(), r.value()));
          offsets.put(
              new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
        }
        producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
        if (transactions == haltAfter) {
          producer.flush();
          Json.emit("event", "halting", "records", records.count(), "transactions", transactions);
          Runtime.getRuntime().halt(3);
        }
        producer.commitTransaction();
        copied += records.count();
        transactions++;
        Json.emit(
            "event",
            "committed",
            "records",
            records.count(),
            "generation",
            consumer.groupMetadata().generationId());
      }
      Json.emit(
          "event", "copied", "count", copied, "transactions", transactions, "timedOut",
          copied < expected);
    } catch (Exception e) {
      Json.fail("error", e);
    }
  }
}

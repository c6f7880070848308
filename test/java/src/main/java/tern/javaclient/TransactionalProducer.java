package tern.javaclient;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * Three transactions of `perTxn` records each from one transactional producer: committed
 * (values c1-i), aborted after its records were acknowledged (a-i), committed (c2-i). Args:
 * bootstrap topic transactionalId perTxn. Prints one {"event":"committed"|"aborted",...} per
 * transaction, then {"event":"done"}.
 */
public final class TransactionalProducer {
  public static void main(String[] args) {
    String bootstrap = args[0];
    String topic = args[1];
    String transactionalId = args[2];
    int perTxn = Integer.parseInt(args[3]);
    try (KafkaProducer<String, String> producer =
        new KafkaProducer<>(ClientConfig.producer(bootstrap, transactionalId))) {
      producer.initTransactions();
      transaction(producer, topic, "c1", perTxn, true);
      transaction(producer, topic, "a", perTxn, false);
      transaction(producer, topic, "c2", perTxn, true);
      Json.emit("event", "done");
    } catch (Exception e) {
      Json.fail("error", e);
    }
  }

  private static void transaction(
      KafkaProducer<String, String> producer,
      String topic,
      String prefix,
      int count,
      boolean commit)
      throws Exception {
    producer.beginTransaction();
    for (int i = 0; i < count; i++)
      producer.send(new ProducerRecord<>(topic, "k-" + i, prefix + "-" + i));
    producer.flush(); // every record acknowledged (written, not yet visible) before the end
    if (commit) producer.commitTransaction();
    else producer.abortTransaction();
    Json.emit("event", commit ? "committed" : "aborted", "prefix", prefix, "records", count);
  }
}

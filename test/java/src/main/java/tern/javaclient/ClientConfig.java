package tern.javaclient;

import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** The client settings the programs share: string keys and values, bounded timeouts. */
final class ClientConfig {
  private ClientConfig() {}

  /** An idempotent producer (acks=all); transactional when transactionalId is not null. */
  static Properties producer(String bootstrap, String transactionalId) {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "60000");
    p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "30000");
    p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "60000");
    if (transactionalId != null) {
      p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
      p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "30000");
    }
    return p;
  }

  /** A read_committed consumer; in a classic group when groupId is not null (no auto commit). */
  static Properties consumer(String bootstrap, String groupId) {
    return consumer(bootstrap, groupId, "classic");
  }

  /**
   * A read_committed consumer in a group of this protocol: "classic" or "consumer" (KIP-848,
   * where the coordinator owns session and heartbeat timing: the client refuses to set them).
   */
  static Properties consumer(String bootstrap, String groupId, String protocol) {
    Properties p = new Properties();
    p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "60000");
    if (groupId != null && protocol.equals("consumer")) {
      p.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
      p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
    } else if (groupId != null) {
      p.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
      // Short sessions: a copier that died is out of the group in seconds (tern allows >= 1 s).
      p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "6000");
      p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "1000");
    }
    return p;
  }
}

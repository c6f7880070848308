#!/usr/bin/python3
# A consume-transform-produce copier on confluent-kafka (librdkafka), the exactly-once pattern
# from librdkafka's examples: a consumer in group GROUP (read_committed, no auto-commit) reads
# INPUT; each poll's records go to OUTPUT upper-cased inside one transaction together with the
# consumer's positions (send_offsets_to_transaction). An abortable error aborts and rewinds the
# consumer to the committed offsets; a fatal one exits 3. Prints "copied N" after each commit
# and exits 0 once STOP_AFTER records were copied in all or after IDLE_S seconds with nothing new.
# usage: kafka_copier.py BOOTSTRAP GROUP INPUT OUTPUT TRANSACTIONAL_ID STOP_AFTER IDLE_S
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

BATCH_MAX = 200
RUN_S_MAX = 240
COMMIT_ATTEMPTS_MAX = 5


def rewind(consumer):
    """Back to the group's committed offsets: what the aborted transaction read is read again."""
    assignment = consumer.assignment()
    if not assignment:
        return
    for tp in consumer.committed(assignment, timeout=30):
        consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))


def commit(producer):
    """commit_transaction, again while its error is retriable (bounded)."""
    for attempt in range(COMMIT_ATTEMPTS_MAX):
        try:
            producer.commit_transaction(60)
            return
        except KafkaException as e:
            if not e.args[0].retriable() or attempt == COMMIT_ATTEMPTS_MAX - 1:
                raise


def main():
    bootstrap, group, source, sink, txn_id = sys.argv[1:6]
    stop_after, idle_s = int(sys.argv[6]), float(sys.argv[7])
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
        "isolation.level": "read_committed", "auto.offset.reset": "earliest",
        "session.timeout.ms": 10000,
    })
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "transaction.timeout.ms": 30000})
    producer.init_transactions(60)
    consumer.subscribe([source])
    copied = 0
    last_progress = time.monotonic()
    deadline = time.monotonic() + RUN_S_MAX
    while copied < stop_after and time.monotonic() < deadline and time.monotonic() - last_progress < idle_s:
        records = [m for m in consumer.consume(num_messages=BATCH_MAX, timeout=0.5) if m.error() is None]
        if not records:
            continue
        try:
            producer.begin_transaction()
            for m in records:
                producer.produce(sink, value=(m.value() or b"").upper(), key=m.key())
            producer.send_offsets_to_transaction(consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 60)
            commit(producer)
            copied += len(records)
            last_progress = time.monotonic()
            print(f"copied {copied}", flush=True)
        except KafkaException as e:
            err = e.args[0]
            if err.fatal():
                print(f"fatal {err.name()}: {err.str()}", flush=True)
                sys.exit(3)
            print(f"aborting after {err.name()}: {err.str()}", flush=True)
            if err.txn_requires_abort():
                producer.abort_transaction(60)
            rewind(consumer)
        except KafkaError as err:
            print(f"error {err}", flush=True)
            rewind(consumer)
    consumer.close()
    print(f"done {copied}", flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
# A librdkafka (confluent-kafka) consumer in a classic consumer group, for the Kafka listener's
# group tests: subscribes to a topic, prints one JSON line per record ({"p", "o", "v"}) and one
# per assignment change ({"assigned": [...]}) on stdout, commits each record synchronously
# before polling again (so a rebalance never re-delivers what it printed), and on SIGTERM
# closes (commit, LeaveGroup) and exits 0. Usage: kafka-group-consumer.py BROKERS TOPIC GROUP
# [DELAY_MS per record] [GROUP_INSTANCE_ID (a static member)]
import json
import signal
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

brokers, topic, group = sys.argv[1], sys.argv[2], sys.argv[3]
delay_s = (int(sys.argv[4]) if len(sys.argv) > 4 else 0) / 1000.0
instance_id = sys.argv[5] if len(sys.argv) > 5 else ""
stop = False


def on_term(_signum, _frame):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def on_assign(_consumer, partitions):
    emit({"assigned": sorted(p.partition for p in partitions)})


def on_revoke(_consumer, partitions):
    emit({"revoked": sorted(p.partition for p in partitions)})


static = {"group.instance.id": instance_id} if instance_id else {}
c = Consumer({
    **static,
    "bootstrap.servers": brokers,
    "group.id": group,
    "client.id": "py-" + group,
    "auto.offset.reset": "earliest",
    "enable.auto.commit": False,
    "session.timeout.ms": 10000,
    "heartbeat.interval.ms": 500,
    "max.poll.interval.ms": 60000,
})
c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
# The group moved on without this commit: whoever owns the partition next (this consumer again
# included: an assignment starts at the committed offset) reads the record again.
FENCED = (KafkaError.ILLEGAL_GENERATION, KafkaError.UNKNOWN_MEMBER_ID, KafkaError.REBALANCE_IN_PROGRESS, KafkaError.FENCED_INSTANCE_ID)


def commit(m):
    """Commits the record's offset; retries what is retriable (a coordinator failover), at most 60 s."""
    for _ in range(240):
        try:
            c.commit(message=m, asynchronous=False)
            return True
        except KafkaException as e:
            err = e.args[0]
            sys.stderr.write("commit failed: %s\n" % err)
            if err.code() in FENCED:
                return False
            time.sleep(0.25)
    return False
while not stop:
    m = c.poll(0.2)
    if m is None:
        continue
    if m.error():
        sys.stderr.write("consumer error: %s\n" % m.error())
        continue
    if commit(m):
        emit({"p": m.partition(), "o": m.offset(), "v": m.value().decode()})
    else:
        # Not committed: read it again (unless the partition has moved on to another member,
        # which starts at the committed offset), never skip past it.
        try:
            c.seek(TopicPartition(m.topic(), m.partition(), m.offset()))
        except KafkaException as e:
            sys.stderr.write("seek back failed: %s\n" % e.args[0])
    if delay_s > 0:
        time.sleep(delay_s)
c.close()

#!/usr/bin/python3
# A librdkafka (confluent-kafka) consumer in a classic consumer group, for the Kafka listener's
# group tests: subscribes to a topic, prints one JSON line per record ({"p", "o", "v"}) and one
# per assignment change ({"assigned": [...]}) on stdout, commits each record synchronously
# before polling again (so a rebalance never re-delivers what it printed), and on SIGTERM
# closes (commit, LeaveGroup) and exits 0. Usage: kafka-group-consumer.py BROKERS TOPIC GROUP
# [DELAY_MS per record]
import json
import signal
import sys
import time

from confluent_kafka import Consumer, KafkaException

brokers, topic, group = sys.argv[1], sys.argv[2], sys.argv[3]
delay_s = (int(sys.argv[4]) if len(sys.argv) > 4 else 0) / 1000.0
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


c = Consumer({
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
while not stop:
    m = c.poll(0.2)
    if m is None:
        continue
    if m.error():
        sys.stderr.write("consumer error: %s\n" % m.error())
        continue
    try:
        c.commit(message=m, asynchronous=False)
    except KafkaException as e:
        # Not committed: the next owner reads it again, so it is not reported as consumed.
        sys.stderr.write("commit failed: %s\n" % e)
        continue
    emit({"p": m.partition(), "o": m.offset(), "v": m.value().decode()})
    if delay_s > 0:
        time.sleep(delay_s)
c.close()

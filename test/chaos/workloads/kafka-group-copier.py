#!/usr/bin/python3
# The chaos suite's librdkafka copier (workload "kafka-copier"): the same consume-transform-
# produce loop as the demo's copier (scripts/demo/copier.ts --subscribe --history), written on
# confluent-kafka (librdkafka) against the brokers' Kafka listeners: a classic consumer group
# member (read_committed, no auto-commit) reads INPUT; each poll's records go to the same
# partition of OUTPUT, transformed as the demo does, in one transaction with the consumer's
# positions (send_offsets_to_transaction). It prints the history the chaos checker reads, one
# JSON line per event, in copier.ts's CopierHistoryEvent shapes:
#   {"event":"owned","partitions":[...]}                 after a poll that changed the assignment
#   {"event":"begin","txn":N,"polled":[[p,"offset","value"],...]}
#   {"event":"end","txn":N,"outcome":"ok"|"fail"|"unknown","sent":[[p,"offset"],...],"error":"..."}
# "unknown": the commit was attempted and its outcome is not known. SIGTERM: finish the current
# transaction, close (LeaveGroup) and exit 0. A fatal error (fenced) exits 3.
# usage: kafka-group-copier.py BOOTSTRAP GROUP INPUT OUTPUT TRANSACTIONAL_ID [TXN_TIMEOUT_MS]
import json
import os
import signal
import sys

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

MAX_POLL_RECORDS = 20
CALL_TIMEOUT_S = 30
COMMIT_ATTEMPTS_MAX = 5
SUFFIX = " [copied]"  # scripts/demo/transform.ts
stop = False


def on_term(_signum, _frame):
    global stop
    stop = True


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def transform(value):
    return value.upper() + SUFFIX


def rewind(consumer):
    """Back to the group's committed offsets: what an aborted transaction polled is polled again."""
    assignment = consumer.assignment()
    if not assignment:
        return
    for tp in consumer.committed(assignment, timeout=CALL_TIMEOUT_S):
        consumer.seek(TopicPartition(tp.topic, tp.partition, tp.offset if tp.offset >= 0 else 0))


def tls_config():
    """SSL to a TLS cluster (chaos --tls sets TERN_TLS_*_FILE, as the CLI reads them); {} for plaintext."""
    ca = os.environ.get("TERN_TLS_CA_FILE")
    if not ca:
        return {}
    conf = {"security.protocol": "ssl", "ssl.ca.location": ca}
    cert, key = os.environ.get("TERN_TLS_CERT_FILE"), os.environ.get("TERN_TLS_KEY_FILE")
    if cert and key:
        conf.update({"ssl.certificate.location": cert, "ssl.key.location": key})
    return conf


def main():
    bootstrap, group, source, sink, txn_id = sys.argv[1:6]
    txn_timeout_ms = int(sys.argv[6]) if len(sys.argv) > 6 else 20000
    signal.signal(signal.SIGTERM, on_term)
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "client.id": txn_id,
        "enable.auto.commit": False, "isolation.level": "read_committed", "auto.offset.reset": "earliest",
        # The chaos cluster's group session timeout is 6 s (chaos-cluster.ts).
        "session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "max.poll.interval.ms": 60000,
        **tls_config(),
    })
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id, "transaction.timeout.ms": txn_timeout_ms, "linger.ms": 2, **tls_config()})
    producer.init_transactions(CALL_TIMEOUT_S * 2)
    consumer.subscribe([source])
    reported = None
    n = 0
    while not stop:
        records = [m for m in consumer.consume(num_messages=MAX_POLL_RECORDS, timeout=0.5) if m.error() is None]
        owned = sorted(tp.partition for tp in consumer.assignment())
        if owned != reported:
            emit({"event": "owned", "partitions": owned})
            reported = owned
        if not records:
            continue
        txn, n = n, n + 1
        emit({"event": "begin", "txn": txn, "polled": [[m.partition(), str(m.offset()), (m.value() or b"").decode()] for m in records]})
        sent = [None] * len(records)
        committing = False

        def delivered(i):
            def report(err, msg):
                sent[i] = [-1, "-1"] if err is not None else [msg.partition(), str(msg.offset())]
            return report

        try:
            producer.begin_transaction()
            for i, m in enumerate(records):
                producer.produce(sink, partition=m.partition(), key=m.key(), value=transform((m.value() or b"").decode()).encode(), on_delivery=delivered(i))
            producer.send_offsets_to_transaction(consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), CALL_TIMEOUT_S)
            committing = True
            for attempt in range(COMMIT_ATTEMPTS_MAX):
                try:
                    producer.commit_transaction(CALL_TIMEOUT_S * 2)
                    break
                except KafkaException as e:
                    if not e.args[0].retriable() or attempt == COMMIT_ATTEMPTS_MAX - 1:
                        raise
            producer.poll(0)  # serves the delivery reports of what the commit flushed
            emit({"event": "end", "txn": txn, "outcome": "ok", "sent": [s if s is not None else [-1, "-1"] for s in sent]})
        except KafkaException as e:
            err = e.args[0]
            if err.fatal():
                emit({"event": "end", "txn": txn, "outcome": "unknown", "sent": [], "error": f"fatal {err.name()}: {err.str()}"[:200]})
                sys.exit(3)
            aborted = False
            if err.txn_requires_abort() or not committing:
                try:
                    producer.abort_transaction(CALL_TIMEOUT_S * 2)
                    aborted = True
                except KafkaException as abort_error:
                    sys.stderr.write(f"abort failed: {abort_error.args[0]}\n")
            outcome = "unknown" if committing or not aborted else "fail"
            emit({"event": "end", "txn": txn, "outcome": outcome, "sent": [], "error": f"{err.name()}: {err.str()}"[:200]})
            if not aborted:
                sys.exit(4)  # the transaction's state is unknown to this producer: start over (restarted)
            try:
                rewind(consumer)
            except KafkaException as rewind_error:
                sys.stderr.write(f"rewind failed: {rewind_error.args[0]}\n")
                sys.exit(5)
    consumer.close()


if __name__ == "__main__":
    main()

#!/usr/bin/python3
# The librdkafka half of `npm run bench -- kafka` (confluent-kafka, Debian python3-confluent-kafka):
# an idempotent producer (acks=all) sends RECORD_BYTES values round-robin over the partitions for
# DURATION_S seconds through the brokers' Kafka listeners, then a consumer reads every partition
# back from the beginning. Prints one JSON object: records produced, seconds, delivery latency
# p50/p99 (produce() to delivery report, ms), records and bytes fetched, fetch seconds, and this
# process's CPU while producing and while reading back (librdkafka's threads included).
# WINDOW bounds the records produced and not yet acknowledged (queue.buffering.max.messages), as
# the libs/client run's window does, so that latency compares like with like.
# LINGER_MS is linger.ms (0 for the one-in-flight case, whose WINDOW is 1).
# usage: kafka-librdkafka-client.py BOOTSTRAP TOPIC PARTITIONS DURATION_S RECORD_BYTES WINDOW LINGER_MS
import json
import resource
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

FETCH_TIMEOUT_S = 120


def cpu_ms():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return (r.ru_utime + r.ru_stime) * 1000


def percentile(sorted_values, p):
    if not sorted_values:
        return 0
    return sorted_values[min(len(sorted_values) - 1, int(p / 100 * len(sorted_values)))]


def main():
    bootstrap, topic = sys.argv[1], sys.argv[2]
    partitions, duration_s, size, window = int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
    linger_ms = int(sys.argv[7])
    value = b"x" * size
    latencies = []
    counts = {"produced": 0, "failed": 0}

    def delivered(err, _msg, t0):
        if err is not None:
            counts["failed"] += 1
            return
        counts["produced"] += 1
        latencies.append((time.perf_counter() - t0) * 1000)

    producer = Producer({
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "enable.idempotence": True,
        "linger.ms": linger_ms,
        "queue.buffering.max.messages": window,
    })
    cpu0 = cpu_ms()
    start = time.perf_counter()
    end = start + duration_s
    i = 0
    while time.perf_counter() < end:
        t0 = time.perf_counter()
        try:
            producer.produce(topic, value, partition=i % partitions, on_delivery=lambda e, m, t0=t0: delivered(e, m, t0))
            i += 1
        except BufferError:
            producer.poll(0.005)
            continue
        if i % 500 == 0:
            producer.poll(0)
    left = producer.flush(60)
    produce_s = time.perf_counter() - start
    produce_cpu = cpu_ms() - cpu0

    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "bench-kafka-readback",
        "enable.auto.commit": False,
        "fetch.max.bytes": 16 * 1024 * 1024,
        "max.partition.fetch.bytes": 4 * 1024 * 1024,
    })
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    fetched_records = fetched_bytes = 0
    fetch_start = time.perf_counter()
    fetch_cpu0 = cpu_ms()
    deadline = fetch_start + FETCH_TIMEOUT_S
    while fetched_records < counts["produced"] and time.perf_counter() < deadline:
        # consume() waits for num_messages or the timeout: asking for no more than are left
        # ends the read-back at its last record instead of a timeout later.
        wanted = min(10_000, counts["produced"] - fetched_records)
        for m in consumer.consume(num_messages=wanted, timeout=1.0):
            if m.error() is not None:
                raise KafkaException(m.error())
            fetched_records += 1
            fetched_bytes += len(m.value() or b"")
    fetch_s = time.perf_counter() - fetch_start
    fetch_cpu = cpu_ms() - fetch_cpu0
    consumer.close()
    latencies.sort()
    print(json.dumps({
        "produced": counts["produced"], "failed": counts["failed"] + left, "produceS": produce_s,
        "p50": percentile(latencies, 50), "p99": percentile(latencies, 99),
        "fetchedRecords": fetched_records, "fetchedBytes": fetched_bytes, "fetchS": fetch_s,
        "produceCpuMs": produce_cpu, "fetchCpuMs": fetch_cpu,
    }))


if __name__ == "__main__":
    main()

# A librdkafka (confluent-kafka) transactional producer driven by kafka-transactions.test.ts:
# init_transactions, then one transaction per line read from stdin, each a JSON object
# {"commit": bool, "topic": str, "partition": int, "values": [str]}, optionally with
# "offsets": {"group": str, "topic": str, "partition": int, "offset": int}, which the
# transaction also commits for that group (send_offsets_to_transaction: AddOffsetsToTxn, then
# TxnOffsetCommit on the group's coordinator), and "pause": true, which makes it print
# {"produced": i} once the records are acknowledged and wait for one more stdin line before it
# ends the transaction, and "flush": true, which flushes before committing. The test may do things, such as SIGKILL a coordinator, between lines. After each transaction it prints one JSON
# line {"done": i, "ok": bool, "error": str|null}; after an abortable error it aborts the
# transaction itself and adds "aborted": bool. EOF on stdin ends it. Exit code 0 unless
# init_transactions failed. argv[3], optional: JSON of librdkafka settings to add.
import json
import sys

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

bootstrap, transactional_id = sys.argv[1], sys.argv[2]
producer = Producer({
    "bootstrap.servers": bootstrap,
    "transactional.id": transactional_id,
    "transaction.timeout.ms": 60000,
    "linger.ms": 5,
    "message.timeout.ms": 60000,
    "socket.timeout.ms": 10000,
    **(json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}),
})


def say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


try:
    producer.init_transactions(60)
except KafkaException as e:
    say({"init": False, "error": str(e.args[0])})
    sys.exit(1)
say({"init": True})

# One consumer per group, only for its group metadata (it never subscribes: no membership).
consumers = {}


def group_metadata(group):
    if group not in consumers:
        consumers[group] = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    return consumers[group].consumer_group_metadata()


for i, line in enumerate(sys.stdin):
    step = json.loads(line)
    try:
        producer.begin_transaction()
        for v in step["values"]:
            producer.produce(step["topic"], value=v.encode(), partition=step["partition"])
        if "offsets" in step:
            o = step["offsets"]
            producer.send_offsets_to_transaction([TopicPartition(o["topic"], o["partition"], o["offset"])], group_metadata(o["group"]), 60)
        if step.get("pause"):
            producer.flush(60)
            say({"produced": i})
            sys.stdin.readline()
        if step.get("flush"):
            # Delivery settles (acknowledged or timed out) before commit_transaction: a record
            # that times out then fails the commit up front. Inside commit_transaction, librdkafka
            # 2.0 can send EndTxn(commit) while that record's timeout is being raised (seen once
            # in CI), and its abort then meets a committed transaction (INVALID_TXN_STATE, fatal).
            producer.flush(60)
        if step["commit"]:
            producer.commit_transaction(60)
        else:
            producer.flush(60)
            producer.abort_transaction(60)
        say({"done": i, "ok": True, "error": None})
    except KafkaException as e:
        err = e.args[0]
        answer = {"done": i, "ok": False, "error": str(err), "retriable": err.retriable(), "abortable": err.txn_requires_abort(), "fatal": err.fatal()}
        if err.txn_requires_abort():
            try:
                producer.abort_transaction(60)
                answer["aborted"] = True
            except KafkaException as e2:
                answer["aborted"] = False
                answer["abort_error"] = str(e2.args[0])
        say(answer)

for c in consumers.values():
    c.close()

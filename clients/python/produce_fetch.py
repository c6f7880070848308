"""A tern client in Python, built from proto/ alone: creates a topic, produces one committed
and one aborted transaction (InitProducerId, AddPartitionsToTxn, Produce, EndTxn), then fetches
read_committed and checks that exactly the committed records come back.

    /usr/bin/python3 clients/python/produce_fetch.py --bootstrap HOST:PORT [--topic T]
        [--transactional-id ID] [--gen-dir DIR]

Prints one JSON object on stdout; exit 0 when the fetch returned exactly the committed records.
"""
import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEADLINE_S = 10.0
RETRY_FOR_S = 60.0
RETRIABLE = {"NOT_LEADER_OR_FOLLOWER", "LEADER_NOT_AVAILABLE", "UNKNOWN_TOPIC_OR_PARTITION", "NOT_COORDINATOR",
             "COORDINATOR_NOT_AVAILABLE", "COORDINATOR_LOAD_IN_PROGRESS", "CONCURRENT_TRANSACTIONS", "REQUEST_TIMED_OUT",
             "NOT_CONTROLLER", "NETWORK_EXCEPTION"}


def load_generated(gen_dir):
    if not os.path.exists(os.path.join(gen_dir, "tern", "v1", "broker_pb2.py")):
        sys.path.insert(0, HERE)
        from generate import generate
        generate(gen_dir, os.path.join(HERE, "..", "..", "proto"))
    sys.path.insert(0, gen_dir)
    import grpc  # noqa: F401
    from tern.v1 import common_pb2, controller_pb2, controller_pb2_grpc, broker_pb2, broker_pb2_grpc, coordinator_pb2, coordinator_pb2_grpc
    return common_pb2, controller_pb2, controller_pb2_grpc, broker_pb2, broker_pb2_grpc, coordinator_pb2, coordinator_pb2_grpc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", default="127.0.0.1:9090")
    ap.add_argument("--topic", default="python-client")
    ap.add_argument("--transactional-id", default="python-client-txn")
    ap.add_argument("--gen-dir", default=os.path.join(tempfile.gettempdir(), "tern-python-gen"))
    a = ap.parse_args()
    import grpc
    common, ctl, ctl_grpc, brk, brk_grpc, coord, coord_grpc = load_generated(a.gen_dir)
    name = common.ErrorCode.Name

    def retry(what, fn):
        """Calls fn until it returns non-None; retriable codes (in the body or the trailer) are retried, bounded."""
        end = time.time() + RETRY_FOR_S
        last = None
        while time.time() < end:
            try:
                out = fn()
                if out is not None:
                    return out
            except grpc.RpcError as e:
                code = dict(e.trailing_metadata() or ()).get("tern-error-name", "")
                last = f"{e.code().name} {code} {e.details()}"
                if code not in RETRIABLE and e.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
                    raise
            time.sleep(0.2)
        raise SystemExit(f"{what} did not succeed within {RETRY_FOR_S}s (last: {last})")

    controller = ctl_grpc.ControllerStub(grpc.insecure_channel(a.bootstrap))
    created = controller.CreateTopics(ctl.CreateTopicsRequest(topics=[ctl.CreatableTopic(name=a.topic, partitions=1, replication_factor=3)]), timeout=DEADLINE_S)
    err = created.results[0].error.code
    if err not in (common.NONE, common.TOPIC_ALREADY_EXISTS):
        raise SystemExit(f"CreateTopics: {name(err)} {created.results[0].error.message}")

    def view():
        return controller.Metadata(ctl.MetadataRequest(linearizable=False), timeout=DEADLINE_S).metadata

    def leader_address():
        m = view()
        for t in m.topics:
            if t.name == a.topic and t.partitions and t.partitions[0].leader >= 0:
                for n in m.nodes:
                    if n.role == ctl.BROKER and n.node_id == t.partitions[0].leader and n.alive:
                        return n.address
        return None

    coordinators = [n.address for n in view().nodes if n.role == ctl.COORDINATOR and n.alive]
    if not coordinators:
        raise SystemExit("no alive coordinator in metadata")

    def txn_stub():
        any_coord = coord_grpc.TransactionCoordinatorStub(grpc.insecure_channel(coordinators[0]))
        r = any_coord.FindCoordinator(coord.FindCoordinatorRequest(key=a.transactional_id, key_type=coord.TRANSACTION), timeout=DEADLINE_S)
        if r.error_code != common.NONE:
            return None
        return coord_grpc.TransactionCoordinatorStub(grpc.insecure_channel(r.coordinator.address))

    state = {"pid": -1, "epoch": -1}

    def init():
        stub = txn_stub()
        if stub is None:  # FindCoordinator answered an error (e.g. no leader yet): retry
            return None
        r = stub.InitProducerId(coord.InitProducerIdRequest(transactional_id=a.transactional_id, transaction_timeout_ms=60000, producer_id=-1, producer_epoch=-1), timeout=DEADLINE_S)
        state["pid"], state["epoch"] = r.producer_id, r.producer_epoch
        return True

    retry("InitProducerId", init)
    tp = common.TopicPartition(topic=a.topic, partition=0)

    def transaction(values, commit):
        def add():
            stub = txn_stub()
            if stub is None:
                return None
            r = stub.AddPartitionsToTxn(coord.AddPartitionsToTxnRequest(transactional_id=a.transactional_id, producer_id=state["pid"], producer_epoch=state["epoch"], partitions=[tp]), timeout=DEADLINE_S)
            codes = [x.error_code for x in r.results]
            if any(c != common.NONE for c in codes):
                if all(name(c) in RETRIABLE for c in codes):
                    return None
                raise SystemExit(f"AddPartitionsToTxn: {[name(c) for c in codes]}")
            return True

        retry("AddPartitionsToTxn", add)

        def produce():
            address = leader_address()
            if address is None:
                return None
            batch = common.RecordBatch(producer_id=state["pid"], producer_epoch=state["epoch"], base_sequence=0, is_transactional=True,
                                       records=[common.Record(value=v.encode()) for v in values])
            r = brk_grpc.BrokerStub(grpc.insecure_channel(address)).Produce(brk.ProduceRequest(transactional_id=a.transactional_id, acks=-1, timeout_ms=10000,
                                                                                                 partitions=[brk.ProducePartitionData(topic=a.topic, partition=0, batch=batch)]), timeout=DEADLINE_S + 5)
            code = r.partitions[0].error_code
            if code == common.NONE:
                return True
            if name(code) in RETRIABLE:
                return None
            raise SystemExit(f"Produce: {name(code)} {r.partitions[0].error_message}")

        retry("Produce", produce)

        def end():
            stub = txn_stub()
            if stub is None:
                return None
            r = stub.EndTxn(coord.EndTxnRequest(transactional_id=a.transactional_id, producer_id=state["pid"], producer_epoch=state["epoch"], committed=commit), timeout=DEADLINE_S)
            state["pid"], state["epoch"] = r.producer_id, r.producer_epoch  # transactions V2: the next epoch
            return True

        retry("EndTxn", end)

    run = str(int(time.time() * 1000))
    committed = [f"py-commit-{run}-{i}" for i in range(3)]
    aborted = [f"py-abort-{run}-{i}" for i in range(2)]
    transaction(committed, True)
    transaction(aborted, False)

    def fetch():
        address = leader_address()
        if address is None:
            return None
        r = brk_grpc.BrokerStub(grpc.insecure_channel(address)).Fetch(brk.FetchRequest(max_wait_ms=500, min_bytes=1, isolation_level=common.READ_COMMITTED, decode_records=True,
                                                                                        partitions=[brk.FetchPartition(topic=a.topic, partition=0, fetch_offset=0)]), timeout=DEADLINE_S)
        p = r.partitions[0]
        if p.error_code != common.NONE:
            return None
        values = [rec.value.decode() for b in p.batches for rec in b.records]
        mine = [v for v in values if f"-{run}-" in v]
        # The committed records appear once the commit markers are written (the LSO moves past them).
        return mine if len([v for v in mine if v.startswith("py-commit")]) >= len(committed) else None

    fetched = retry("Fetch read_committed", fetch)
    ok = fetched == committed
    print(json.dumps({"ok": ok, "committed": committed, "aborted": aborted, "fetched": fetched, "producerId": str(state["pid"]), "producerEpoch": state["epoch"]}))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

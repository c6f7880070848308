// Pins the sets derived from the error table's columns: each replaced a private set in a
// client or service, and a flag moved in the table must show up here as a deliberate change.
import { describe, expect, it } from "vitest";
import {
  COORDINATOR_MOVED_CODES,
  ERRORS,
  FENCED_CODES,
  FIND_COORDINATOR_CODES,
  PRODUCER_FATAL_CODES,
  producerAction,
  REFRESH_METADATA_CODES,
  REFUSED_CODES,
  REJOIN_CODES,
  RETRIABLE_CODES,
  type ErrorName,
} from "./errors.js";

const sorted = (s: ReadonlySet<string>): string[] => [...s].sort();

describe("sets derived from the error table", () => {
  it("refresh metadata: libs/client leader-call and sender", () => {
    expect(sorted(REFRESH_METADATA_CODES)).toEqual([
      "BROKER_NOT_AVAILABLE",
      "LEADER_NOT_AVAILABLE",
      "NETWORK_EXCEPTION",
      "NOT_LEADER_OR_FOLLOWER",
      "SHUTTING_DOWN",
      "UNKNOWN_TOPIC_OR_PARTITION",
    ]);
  });

  it("find the coordinator again: libs/client coordinator-finder (and the coordinator client)", () => {
    expect(sorted(FIND_COORDINATOR_CODES)).toEqual([
      "BROKER_NOT_AVAILABLE",
      "COORDINATOR_LOAD_IN_PROGRESS",
      "COORDINATOR_NOT_AVAILABLE",
      "NETWORK_EXCEPTION",
      "NOT_COORDINATOR",
      "REQUEST_TIMED_OUT",
      "SHUTTING_DOWN",
    ]);
  });

  it("the coordinator moved: the broker's add-partition verifier", () => {
    expect(sorted(COORDINATOR_MOVED_CODES)).toEqual([
      "COORDINATOR_LOAD_IN_PROGRESS",
      "COORDINATOR_NOT_AVAILABLE",
      "NOT_COORDINATOR",
    ]);
  });

  it("producer fatal: libs/client toClientError", () => {
    expect(sorted(PRODUCER_FATAL_CODES)).toEqual([
      "INVALID_PRODUCER_EPOCH",
      "INVALID_PRODUCER_ID_MAPPING",
      "INVALID_TRANSACTION_TIMEOUT",
      "PRODUCER_FENCED",
      "TRANSACTIONAL_ID_NOT_FOUND",
      "TRANSACTION_COORDINATOR_FENCED",
      "TRANSACTION_TIMED_OUT",
    ]);
  });

  it("fenced: the marker channel manager", () => {
    expect(sorted(FENCED_CODES)).toEqual([
      "INVALID_PRODUCER_EPOCH",
      "PRODUCER_FENCED",
      "TRANSACTION_COORDINATOR_FENCED",
    ]);
  });

  it("rejoin: the consumer group member", () => {
    expect(sorted(REJOIN_CODES)).toEqual(["FENCED_MEMBER_EPOCH", "UNKNOWN_MEMBER_ID"]);
  });

  it("refused: the consumer's fetch and the producer's InitProducerId", () => {
    expect(sorted(REFUSED_CODES)).toEqual([
      "CLUSTER_AUTHORIZATION_FAILED",
      "GROUP_AUTHORIZATION_FAILED",
      "SASL_AUTHENTICATION_FAILED",
      "TOPIC_AUTHORIZATION_FAILED",
      "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    ]);
  });

  it("retriable: the retriable column (markers, the transaction test harness)", () => {
    expect(sorted(RETRIABLE_CODES)).toEqual([
      "BROKER_NOT_AVAILABLE",
      "CONCURRENT_TRANSACTIONS",
      "COORDINATOR_LOAD_IN_PROGRESS",
      "COORDINATOR_NOT_AVAILABLE",
      "KAFKA_STORAGE_ERROR",
      "LEADER_NOT_AVAILABLE",
      "NETWORK_EXCEPTION",
      "NOT_CONTROLLER",
      "NOT_COORDINATOR",
      "NOT_ENOUGH_REPLICAS",
      "NOT_LEADER_OR_FOLLOWER",
      "REBALANCE_IN_PROGRESS",
      "REQUEST_TIMED_OUT",
      "SHUTTING_DOWN",
      "THROTTLING_QUOTA_EXCEEDED",
      "UNKNOWN_TOPIC_OR_PARTITION",
      "UNSTABLE_OFFSET_COMMIT",
    ]);
  });

  it("producerAction: fatal first, then the retriable column, else abortable", () => {
    expect(producerAction("PRODUCER_FENCED")).toBe("fatal");
    expect(producerAction("NOT_LEADER_OR_FOLLOWER")).toBe("retriable");
    expect(producerAction("TOPIC_AUTHORIZATION_FAILED")).toBe("abortable");
    expect(producerAction("INVALID_TXN_STATE")).toBe("abortable");
    for (const name of PRODUCER_FATAL_CODES) expect(ERRORS.get(name)!.retriable, name).toBe(false);
  });

  it("NONE has no flags and is not retriable", () => {
    const none = ERRORS.get("NONE" as ErrorName)!;
    expect(none.next.size).toBe(0);
    expect(none.retriable).toBe(false);
  });
});

import { Metadata, status } from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { ERRORS, TernError, type ErrorName } from "./errors.js";
import {
  ERROR_CODE_TRAILER,
  ERROR_NAME_TRAILER,
  fromGrpcError,
  toGrpcError,
} from "./grpc-errors.js";

function grpcError(code: status, details: string, metadata = new Metadata()): Error {
  return Object.assign(new Error(`${code} ${status[code]}: ${details}`), {
    code,
    details,
    metadata,
  });
}

describe("grpc errors", () => {
  it("toGrpcError uses the table's status and sets both trailers", () => {
    const e = toGrpcError(new TernError("NOT_COORDINATOR", "ask partition 22's leader"));
    expect(e.code).toBe(status.FAILED_PRECONDITION);
    expect(e.details).toBe("ask partition 22's leader");
    expect(e.metadata.get(ERROR_CODE_TRAILER)).toEqual(["16"]);
    expect(e.metadata.get(ERROR_NAME_TRAILER)).toEqual(["NOT_COORDINATOR"]);
  });

  it("round-trips every error of the table", () => {
    for (const spec of ERRORS.values()) {
      const back = fromGrpcError(
        toGrpcError(new TernError(spec.name as ErrorName, `m-${spec.code}`)),
      );
      expect(back.errorName).toBe(spec.name);
      expect(back.message).toBe(`m-${spec.code}`);
      expect(back.retriable).toBe(spec.retriable);
    }
  });

  it("never sends OK for a failure", () => {
    expect(toGrpcError(new TernError("NONE")).code).not.toBe(status.OK);
  });

  it("classifies statuses without trailers", () => {
    expect(
      fromGrpcError(grpcError(status.UNAVAILABLE, "No connection established")).errorName,
    ).toBe("NETWORK_EXCEPTION");
    expect(fromGrpcError(grpcError(status.DEADLINE_EXCEEDED, "Deadline exceeded")).errorName).toBe(
      "REQUEST_TIMED_OUT",
    );
    expect(
      fromGrpcError(
        grpcError(status.RESOURCE_EXHAUSTED, "Received message larger than max (5 vs 4)"),
      ).errorName,
    ).toBe("MESSAGE_TOO_LARGE");
    expect(fromGrpcError(grpcError(status.UNIMPLEMENTED, "nope")).errorName).toBe(
      "INVALID_REQUEST",
    );
    expect(fromGrpcError(grpcError(status.INTERNAL, "boom")).errorName).toBe(
      "UNKNOWN_SERVER_ERROR",
    );
    expect(fromGrpcError(new Error("plain")).errorName).toBe("UNKNOWN_SERVER_ERROR");
    expect(fromGrpcError(grpcError(status.UNAVAILABLE, "x")).retriable).toBe(true);
  });

  it("the trailer wins over the status and unknown codes fall back", () => {
    const md = new Metadata();
    md.set(ERROR_CODE_TRAILER, "51");
    expect(fromGrpcError(grpcError(status.UNAVAILABLE, "busy", md)).errorName).toBe(
      "CONCURRENT_TRANSACTIONS",
    );
    const odd = new Metadata();
    odd.set(ERROR_CODE_TRAILER, "9999");
    expect(fromGrpcError(grpcError(status.UNKNOWN, "?", odd)).errorName).toBe(
      "UNKNOWN_SERVER_ERROR",
    );
  });

  it("passes a TernError through unchanged", () => {
    const e = new TernError("PRODUCER_FENCED");
    expect(fromGrpcError(e)).toBe(e);
  });
});

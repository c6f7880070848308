// TernError <-> gRPC status, both ways. A whole-request failure travels as the table's gRPC
// status plus trailers "tern-error-code" (numeric ErrorCode) and "tern-error-name"; a status
// without those trailers (transport failure, deadline, unimplemented) is classified here so
// callers see one error vocabulary and retry only what the table marks retriable.
import { Metadata, status as GrpcStatus, type ServiceError } from "@grpc/grpc-js";
import { errorByCode, TernError, type ErrorName } from "./errors.js";

export const ERROR_CODE_TRAILER = "tern-error-code";
export const ERROR_NAME_TRAILER = "tern-error-name";

/** A grpc-js ServiceError carrying the TernError's status and trailers. */
export function toGrpcError(e: TernError): ServiceError {
  const metadata = new Metadata();
  metadata.set(ERROR_CODE_TRAILER, String(e.code));
  metadata.set(ERROR_NAME_TRAILER, e.errorName);
  const err = new Error(e.message) as ServiceError;
  err.code = e.spec.grpc === GrpcStatus.OK ? GrpcStatus.UNKNOWN : e.spec.grpc;
  err.details = e.message;
  err.metadata = metadata;
  return err;
}

/** Any error from a gRPC call (or anything thrown) as a TernError. */
export function fromGrpcError(err: unknown): TernError {
  if (err instanceof TernError) return err;
  const e = err as Partial<ServiceError> | undefined;
  const grpcCode = typeof e?.code === "number" ? e.code : undefined;
  const details =
    typeof e?.details === "string" && e.details.length > 0
      ? e.details
      : (e as Error | undefined)?.message;
  const trailerCode =
    e?.metadata instanceof Metadata ? e.metadata.get(ERROR_CODE_TRAILER)[0] : undefined;
  if (trailerCode !== undefined && /^-?\d+$/.test(String(trailerCode))) {
    const spec = errorByCode(Number(trailerCode));
    return new TernError(spec.name as ErrorName, details, { grpcCode }, { cause: err });
  }
  return new TernError(
    classifyStatus(grpcCode, details ?? ""),
    details,
    { grpcCode },
    { cause: err },
  );
}

function classifyStatus(code: number | undefined, details: string): ErrorName {
  switch (code) {
    case GrpcStatus.UNAVAILABLE:
    case GrpcStatus.CANCELLED:
      return "NETWORK_EXCEPTION";
    case GrpcStatus.DEADLINE_EXCEEDED:
      return "REQUEST_TIMED_OUT";
    case GrpcStatus.RESOURCE_EXHAUSTED:
      // grpc-js reports an over-sized message this way; anything else is a limit being hit.
      return /larger than max/i.test(details) ? "MESSAGE_TOO_LARGE" : "THROTTLING_QUOTA_EXCEEDED";
    case GrpcStatus.INVALID_ARGUMENT:
    case GrpcStatus.UNIMPLEMENTED:
      return "INVALID_REQUEST";
    default:
      return "UNKNOWN_SERVER_ERROR";
  }
}

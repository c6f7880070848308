// Wraps async unary handlers for grpc-js: a thrown TernError becomes its gRPC status with the
// tern-error-code/tern-error-name trailers; an AssertionError (a broken invariant) is not
// answered and stops the process; anything else is logged and sent as UNKNOWN_SERVER_ERROR
// (INTERNAL). Every call is logged at debug and timed in a histogram.
import * as grpc from "@grpc/grpc-js";
import { Histogram, type Registry } from "prom-client";
import { haltOnAssertion } from "../common/assert.js";
import { TernError, isTernError } from "../common/errors.js";
import { toGrpcError } from "../common/grpc-errors.js";
import type { Logger } from "../common/logger.js";
import { unimplementedHandler } from "./unimplemented.js";

/** An async unary handler; the defaults describe "some handler" (any request it takes is narrower than never). */
export type AsyncUnaryHandler<Req = never, Res = unknown> = (
  request: Req,
  call: grpc.ServerUnaryCall<Req, Res>,
) => Promise<Res>;

/**
 * The async handlers of a generated service, e.g. AsyncHandlers<BrokerHandlers>: each method
 * receives the decoded request (`__Output`: every field present) and answers the message type.
 * Without a type argument (never): a plain map of handlers, unchecked against the contract.
 */
export type AsyncHandlers<H = never> = [H] extends [never]
  ? Readonly<Record<string, AsyncUnaryHandler>>
  : {
      [K in keyof H as string extends K ? never : K]?: H[K] extends grpc.handleUnaryCall<
        infer Req,
        infer Res
      >
        ? AsyncUnaryHandler<Req, Res>
        : never;
    };

export interface UnaryOptions {
  readonly logger: Logger;
  /** When given, calls are timed in tern_rpc_duration_seconds{method,code}. */
  readonly metrics?: Registry;
}

const RPC_HISTOGRAM = "tern_rpc_duration_seconds";

/** The registry's one RPC histogram (a process wraps several services over one registry). */
function rpcHistogram(registry: Registry): Histogram<"method" | "code"> {
  let histogram = registry.getSingleMetric(RPC_HISTOGRAM) as
    Histogram<"method" | "code"> | undefined;
  if (!histogram) {
    histogram = new Histogram({
      name: RPC_HISTOGRAM,
      help: "Server-side duration of unary gRPC calls by method and result code.",
      labelNames: ["method", "code"],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [registry],
    });
  }
  return histogram;
}

/** One async unary handler as a grpc-js handler. */
export function wrapUnary<Req, Res>(
  method: string,
  handler: AsyncUnaryHandler<Req, Res>,
  options: UnaryOptions,
): grpc.handleUnaryCall<Req, Res> {
  const histogram = options.metrics ? rpcHistogram(options.metrics) : undefined;
  return (call, callback) => {
    const startNs = process.hrtime.bigint();
    const finish = (code: string): void => {
      const elapsedS = Number(process.hrtime.bigint() - startNs) / 1e9;
      histogram?.observe({ method, code }, elapsedS);
      // Checked first: the fields (the peer's address is formatted per call) cost even when dropped.
      if (options.logger.isLevelEnabled("debug"))
        options.logger.debug(
          { method, code, elapsedMs: elapsedS * 1000, peer: call.getPeer() },
          "rpc",
        );
    };
    let pending: Promise<Res>;
    try {
      pending = handler(call.request, call);
    } catch (e) {
      pending = Promise.reject(e);
    }
    pending.then(
      (response) => {
        finish("NONE");
        callback(null, response);
      },
      (e: unknown) => {
        // A broken invariant: no answer, the process stops (docs/storage.md, "Invariants").
        if (haltOnAssertion(e)) return;
        const error = asTernError(e, method, options.logger);
        finish(error.errorName);
        callback(toGrpcError(error), null);
      },
    );
  };
}

/**
 * A whole service implementation from a map of async unary handlers. Methods of the definition
 * without a handler answer UNIMPLEMENTED; a handler for a method the definition lacks is a bug.
 */
export function wrapUnaryService<H = never>(
  definition: grpc.ServiceDefinition,
  handlers: NoInfer<AsyncHandlers<H>>,
  options: UnaryOptions,
): grpc.UntypedServiceImplementation {
  for (const name of Object.keys(handlers)) {
    if (!(name in definition))
      throw new Error(
        `handler ${name} is not a method of the service (${Object.keys(definition).join(", ")})`,
      );
  }
  const implementation: grpc.UntypedServiceImplementation = {};
  for (const [name, method] of Object.entries(definition)) {
    // The contract was checked at the call site (AsyncHandlers<H>); here a handler is a handler.
    const handler = (handlers as Readonly<Record<string, AsyncUnaryHandler<unknown> | undefined>>)[
      name
    ];
    if (handler === undefined) {
      implementation[name] = unimplementedHandler(
        method.path,
        method.requestStream,
        method.responseStream,
      );
    } else if (method.requestStream || method.responseStream) {
      throw new Error(
        `${method.path} is a streaming method: wrapUnaryService handles unary methods only`,
      );
    } else {
      implementation[name] = wrapUnary(method.path, handler, options) as grpc.UntypedHandleCall;
    }
  }
  return implementation;
}

function asTernError(e: unknown, method: string, logger: Logger): TernError {
  if (isTernError(e)) return e;
  logger.error({ err: e, method }, "unexpected error in handler");
  return new TernError(
    "UNKNOWN_SERVER_ERROR",
    e instanceof Error ? e.message : String(e),
    {},
    { cause: e },
  );
}

// One typed unary call on a generated gRPC client (libs/common/proto-types), by method name:
// the generated methods are overloaded, so a caller that picks the method by a name it was
// given cannot call it through the type system; unaryCall does, with the request and answer
// types of that method. Failures reject with grpc-js's ServiceError as is (callers map them).
import * as grpc from "@grpc/grpc-js";

/** The unary methods of a generated client C (Produce, produce, ...): the names unaryCall accepts. */
export type UnaryMethodName<C> = {
  [M in keyof C & string]: C[M] extends (argument: never, callback: never) => grpc.ClientUnaryCall
    ? M
    : never;
}[keyof C & string];
/** The request type (what a client sends) of method M of generated client C. */
export type RequestOf<C, M extends keyof C> = C[M] extends (
  argument: infer Req extends object,
  callback: grpc.requestCallback<infer _Res>,
) => grpc.ClientUnaryCall
  ? Req
  : never;
/** The decoded answer (`__Output`: every field present) of method M of generated client C. */
export type ResponseOf<C, M extends keyof C> = C[M] extends (
  argument: infer _Req,
  callback: grpc.requestCallback<infer Res>,
) => grpc.ClientUnaryCall
  ? Res
  : never;

type UnaryMethod<Req, Res> = (
  request: Req,
  metadata: grpc.Metadata,
  options: grpc.CallOptions,
  callback: grpc.requestCallback<Res>,
) => grpc.ClientUnaryCall;

/** Calls `client[method](request, metadata, options)`; resolves with the decoded answer. */
export function unaryCall<C extends grpc.Client, M extends UnaryMethodName<C>>(
  client: C,
  method: M,
  request: RequestOf<C, M>,
  options: grpc.CallOptions = {},
  metadata = new grpc.Metadata(),
): Promise<ResponseOf<C, M>> {
  // One signature of the overloaded method (the type parameter M cannot pick an overload).
  const fn = client[method] as unknown as UnaryMethod<RequestOf<C, M>, ResponseOf<C, M>>;
  return new Promise((resolve, reject) => {
    fn.call(client, request, metadata, options, (err, response) =>
      err ? reject(err) : resolve(response as ResponseOf<C, M>),
    );
  });
}

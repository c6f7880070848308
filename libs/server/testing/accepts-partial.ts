// Tests call gRPC handlers with partial or malformed messages, as a hand-written client may
// send them (the handlers read every field defensively); a handler's typed request says what
// the decoder produces instead. acceptsPartial lets a test pass whatever it builds.
export function acceptsPartial<Req, Res, Rest extends unknown[]>(
  handler: (request: Req, ...rest: Rest) => Promise<Res>,
): (request: unknown, ...rest: Rest) => Promise<Res> {
  return (request, ...rest) => handler(request as Req, ...rest);
}

// The controller client over a transport that is not grpc-js (what the whole-system simulator
// plugs in): its calls name the controller's address, method and deadline; a NOT_CONTROLLER
// refusal's leader-hint trailer sends the next attempt straight to the leader it names; a
// forwarded admin request carries its on-behalf-of header; the metadata watch is a server
// stream whose views reach the listener in version order.
import { Metadata } from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import { TernError } from "../common/errors.js";
import { toGrpcError } from "../common/grpc-errors.js";
import { silentLogger } from "../common/logger.js";
import { SeededRandom } from "../common/prng.js";
import { ManualClock } from "../runtime/testing/manual-clock.js";
import type { ServiceTransport, StreamHandlers } from "../runtime/transport.js";
import { LEADER_ID_TRAILER, ControllerClient } from "./controller-client.js";
import type { ClusterMetadata } from "./types.js";

interface Sent {
  readonly address: string;
  readonly method: string;
  readonly timeoutMs: number;
  readonly headers: Readonly<Record<string, string>> | undefined;
}

/** Controller 0 (port 1) refuses with a hint naming controller 1 (port 2), which answers. */
function twoControllers(): {
  transport: ServiceTransport;
  sent: Sent[];
  streams: Array<StreamHandlers<unknown>>;
} {
  const sent: Sent[] = [];
  const streams: Array<StreamHandlers<unknown>> = [];
  const transport: ServiceTransport = {
    unary: (_service, address, method, _request, options) => {
      sent.push({
        address,
        method: String(method),
        timeoutMs: options.timeoutMs,
        headers: options.headers,
      });
      if (address.endsWith(":1")) {
        const e = toGrpcError(new TernError("NOT_CONTROLLER", "not the leader"));
        (e.metadata as Metadata).set(LEADER_ID_TRAILER, "1");
        return Promise.reject(e);
      }
      return Promise.resolve({ names: ["orders"], acls: [] } as never);
    },
    serverStream: (_service, _address, _method, _request, handlers) => {
      streams.push(handlers as StreamHandlers<unknown>);
      return () => handlers.onEnd(new Error("cancelled"));
    },
  };
  return { transport, sent, streams };
}

function clientOver(transport: ServiceTransport): ControllerClient {
  return new ControllerClient({
    controllers: [
      { id: 0, host: "c0", port: 1 },
      { id: 1, host: "c1", port: 2 },
    ],
    logger: silentLogger(),
    requestTimeoutMs: 1_234,
    transport,
    clock: new ManualClock(),
    random: new SeededRandom(1),
  });
}

const view = (version: string): ClusterMetadata => ({
  version,
  controllerLeader: 1,
  nodes: [],
  topics: [],
});

describe("ControllerClient over a ServiceTransport", () => {
  it("follows the leader hint of a NOT_CONTROLLER refusal at once", async () => {
    const { transport, sent } = twoControllers();
    const client = clientOver(transport);
    expect(await client.listTopics()).toEqual(["orders"]);
    expect(sent.map((s) => [s.address, s.method, s.timeoutMs])).toEqual([
      ["c0:1", "ListTopics", 1_234],
      ["c1:2", "ListTopics", 1_234],
    ]);
    // The next call starts at the leader.
    await client.listTopics();
    expect(sent[2]!.address).toBe("c1:2");
    client.close();
  });

  it("sends a forwarded admin request's principal as a header", async () => {
    const { transport, sent } = twoControllers();
    const client = clientOver(transport);
    await client.describeAcls({}, "User:alice");
    expect(sent.at(-1)!.headers).toEqual({ "tern-on-behalf-of": "User:alice" });
    client.close();
  });

  it("delivers the watch's views in version order, never an older one", () => {
    const { transport, streams } = twoControllers();
    const client = clientOver(transport);
    const seen: string[] = [];
    const stop = client.watchMetadata((m) => seen.push(m.version));
    expect(streams).toHaveLength(1);
    const send = (version: string): void =>
      streams[0]!.onMessage({ keepalive: false, metadata: wireView(version) });
    send("3");
    send("2");
    send("5");
    expect(seen).toEqual(["3", "5"]);
    stop();
    client.close();
  });
});

/** A wire ClusterMetadata as the watch delivers it (every field present). */
function wireView(version: string): unknown {
  const m = view(version);
  return { version: m.version, controllerLeader: m.controllerLeader, nodes: [], topics: [] };
}

// The cross-process limits module: one message bound that every server, client channel and
// Raft transport is built with, and the relation checker that stops a process at start.
import { describe, expect, it } from "vitest";
import { DEFAULT_LIMITS } from "../raft-host/limits.js";
import { channelOptions } from "../raft-host/transport.js";
import { GRPC_CLIENT_OPTIONS, GRPC_SERVER_OPTIONS } from "../grpc/grpc-options.js";
import { atMost, checkLimitRelations, GRPC_MESSAGE_BYTES_MAX, LimitError, MiB } from "./limits.js";

describe("cross-process limits", () => {
  it("every server, client channel and Raft transport sends and accepts the same message bound", () => {
    const sides = [GRPC_SERVER_OPTIONS, GRPC_CLIENT_OPTIONS, channelOptions(DEFAULT_LIMITS)];
    for (const options of sides) {
      expect(options["grpc.max_receive_message_length"]).toBe(GRPC_MESSAGE_BYTES_MAX);
      expect(options["grpc.max_send_message_length"]).toBe(GRPC_MESSAGE_BYTES_MAX);
    }
    expect(DEFAULT_LIMITS.grpcMessageBytesMax).toBe(GRPC_MESSAGE_BYTES_MAX);
  });

  it("names every broken relation, with both values, in one LimitError", () => {
    expect(() => checkLimitRelations("test", [atMost("a", 1, "b", 2)])).not.toThrow();
    let error: unknown;
    try {
      checkLimitRelations("test", [
        atMost("fetch", 50 * MiB, "message", 32 * MiB),
        atMost("x", 1, "y", 2),
        { holds: false, what: "z must be odd" },
      ]);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(LimitError);
    expect((error as LimitError).broken).toEqual([
      `fetch (${50 * MiB}) must be at most message (${32 * MiB})`,
      "z must be odd",
    ]);
    expect((error as LimitError).message).toBe(
      `inconsistent test limits: fetch (${50 * MiB}) must be at most message (${32 * MiB}); z must be odd`,
    );
  });
});

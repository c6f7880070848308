// The blank-disk verdict of a controller over its peers' DescribeCluster answers.
import { describe, expect, it } from "vitest";
import type { ControllerQuorumStatus } from "../../libs/metadata/controller-client.js";
import { blankControllerVerdict, type PeerAnswer } from "./controller-directory.js";

const D = "0b0b0b0b-0000-4000-8000-000000000002";
function status(
  voters: Array<{ nodeId: number; voter?: boolean; directoryId?: string }>,
): PeerAnswer {
  const s: ControllerQuorumStatus = {
    nodeId: 0,
    leader: 0,
    term: 3,
    commitIndex: 10,
    appliedIndex: 10,
    metadataVersion: "10",
    voters: voters.map((v) => ({
      nodeId: v.nodeId,
      address: "h:1",
      voter: v.voter ?? true,
      matchIndex: 0,
      recentActive: false,
      directoryId: v.directoryId ?? "",
    })),
  };
  return { kind: "status", status: s };
}

describe("blank controller verdict", () => {
  it("refuses when a peer lists it as a voter that recorded a data directory (it lost its disk)", () => {
    const v = blankControllerVerdict(
      2,
      "/d",
      new Map<number, PeerAnswer>([
        [
          0,
          status([
            { nodeId: 0, directoryId: D },
            { nodeId: 2, directoryId: D },
          ]),
        ],
        [1, { kind: "unreachable" }],
      ]),
    );
    expect(v.kind).toBe("refuse");
    expect(v.kind === "refuse" && v.message).toMatch(
      /controller 2 has a blank data directory \(\/d\) but controller 0 lists it as a voter .* lost its disk/,
    );
  });

  it("starts when the peers know it as a voter without a recorded directory (a late starter of the first quorum)", () => {
    expect(
      blankControllerVerdict(
        2,
        "/d",
        new Map([
          [0, status([{ nodeId: 2 }])],
          [1, status([{ nodeId: 2 }])],
        ]),
      ),
    ).toEqual({ kind: "start" });
  });

  it("starts when it is not a voter any more (removed, to be added back)", () => {
    expect(
      blankControllerVerdict(
        2,
        "/d",
        new Map([
          [0, status([{ nodeId: 2, voter: false, directoryId: D }])],
          [1, { kind: "starting" }],
        ]),
      ),
    ).toEqual({ kind: "start" });
  });

  it("waits while a peer has not answered at all; peers that are starting count as answers", () => {
    expect(
      blankControllerVerdict(
        2,
        "/d",
        new Map<number, PeerAnswer>([
          [0, { kind: "starting" }],
          [1, { kind: "unreachable" }],
        ]),
      ),
    ).toEqual({ kind: "wait" });
    expect(
      blankControllerVerdict(
        2,
        "/d",
        new Map<number, PeerAnswer>([
          [0, { kind: "starting" }],
          [1, { kind: "starting" }],
        ]),
      ),
    ).toEqual({ kind: "start" });
  });
});

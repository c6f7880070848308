import { describe, expect, it } from "vitest";
import { checkHistory } from "../../../libs/verify/checker.js";
import type {
  AnomalyType,
  History,
  MicroOp,
  Outcome,
  TxnOp,
} from "../../../libs/verify/history.js";

let nextId = 0;
function txn(
  process: number,
  outcome: Outcome,
  ops: MicroOp[],
  invokedMs = nextId * 10,
  completedMs = invokedMs + 5,
): TxnOp {
  return { id: nextId++, process, outcome, ops, invokedMs, completedMs };
}
const send = (key: string, value: string, offset?: number): MicroOp => ({
  f: "send",
  key,
  value,
  ...(offset === undefined ? {} : { offset }),
});
const poll = (reads: Record<string, Array<[number, string]>>): MicroOp => ({ f: "poll", reads });

/** A clean history: two committed transactions, one aborted, one unknown that did commit. */
function cleanHistory(): History {
  nextId = 0;
  return {
    txns: [
      txn(1, "ok", [send("t/0", "a", 0), send("t/1", "b", 0)]),
      txn(2, "fail", [send("t/0", "x", 1)]),
      txn(1, "ok", [send("t/0", "c", 3)]),
      txn(3, "unknown", [send("t/1", "d")]),
      txn(
        4,
        "ok",
        [
          poll({
            "t/0": [
              [0, "a"],
              [3, "c"],
            ],
            "t/1": [[0, "b"]],
          }),
        ],
        100,
        110,
      ),
    ],
    finalReads: {
      "t/0": [
        [0, "a"],
        [3, "c"],
      ],
      "t/1": [
        [0, "b"],
        [2, "d"],
      ],
    },
    offsetCommits: [{ process: 4, key: "t/0", lastPolledOffset: 3, committedOffset: 4 }],
  };
}

function anomaliesOf(h: History): AnomalyType[] {
  return Object.keys(checkHistory(h).anomalies).sort() as AnomalyType[];
}

describe("chaos checker", () => {
  it("accepts a clean history and counts outcomes", () => {
    const result = checkHistory(cleanHistory());
    expect(result.examples).toEqual([]);
    expect(result.valid).toBe(true);
    expect(result.counts).toEqual({ committed: 3, aborted: 1, unknown: 1 });
  });

  it("catches inconsistent offsets", () => {
    const h = cleanHistory();
    expect(
      anomaliesOf({
        ...h,
        finalReads: {
          ...h.finalReads,
          "t/0": [
            [0, "zz"],
            [3, "c"],
          ],
        },
      }),
    ).toContain("inconsistent-offsets");
  });

  it("catches a duplicate (one value at two offsets)", () => {
    const h = cleanHistory();
    expect(
      anomaliesOf({
        ...h,
        finalReads: {
          ...h.finalReads,
          "t/0": [
            [0, "a"],
            [3, "c"],
            [4, "a"],
          ],
        },
      }),
    ).toContain("duplicate");
  });

  it("catches a lost write (missing below visible offsets)", () => {
    const h = cleanHistory();
    expect(anomaliesOf({ ...h, finalReads: { ...h.finalReads, "t/0": [[3, "c"]] } })).toContain(
      "lost-write",
    );
  });

  it("catches an unseen committed write", () => {
    const h = cleanHistory();
    expect(anomaliesOf({ ...h, finalReads: { ...h.finalReads, "t/0": [[0, "a"]] } })).toContain(
      "unseen",
    );
  });

  it("catches an aborted read in a poll and in the final read", () => {
    const h = cleanHistory();
    nextId = 50;
    const reader = txn(5, "ok", [poll({ "t/0": [[1, "x"]] })]);
    expect(anomaliesOf({ ...h, txns: [...h.txns, reader] })).toContain("aborted-read");
    expect(
      anomaliesOf({
        ...h,
        finalReads: {
          ...h.finalReads,
          "t/0": [
            [0, "a"],
            [1, "x"],
            [3, "c"],
          ],
        },
      }),
    ).toContain("aborted-read");
  });

  it("catches a read of an unknown transaction that never committed", () => {
    const h = cleanHistory();
    nextId = 60;
    const reader = txn(5, "ok", [poll({ "t/1": [[2, "d"]] })]);
    const finalReads = { ...h.finalReads, "t/1": [[0, "b"]] as Array<[number, string]> };
    expect(anomaliesOf({ ...h, txns: [...h.txns, reader], finalReads })).toContain("aborted-read");
  });

  it("catches a dirty read (value read before its writer began)", () => {
    const h = cleanHistory();
    const early = {
      ...txn(6, "ok", [poll({ "t/0": [[3, "c"]] })]),
      invokedMs: -20,
      completedMs: -10,
    };
    expect(anomaliesOf({ ...h, txns: [...h.txns, early] })).toContain("dirty-read");
  });

  it("catches non-monotonic sends", () => {
    const h = cleanHistory();
    nextId = 70;
    const later = txn(1, "ok", [send("t/0", "e", 2)], 500, 505);
    const finalReads = {
      ...h.finalReads,
      "t/0": [
        [0, "a"],
        [2, "e"],
        [3, "c"],
      ] as Array<[number, string]>,
    };
    expect(anomaliesOf({ ...h, txns: [...h.txns, later], finalReads })).toContain(
      "non-monotonic-send",
    );
  });

  it("catches non-monotonic polls but not re-polls after an abort", () => {
    const h = cleanHistory();
    nextId = 80;
    const again = txn(4, "ok", [poll({ "t/0": [[0, "a"]] })], 200, 210);
    expect(anomaliesOf({ ...h, txns: [...h.txns, again] })).toContain("non-monotonic-poll");
    const abortedFirst = txn(7, "fail", [poll({ "t/0": [[0, "a"]] })], 300, 305);
    const retry = txn(7, "ok", [poll({ "t/0": [[0, "a"]] })], 310, 315);
    expect(anomaliesOf({ ...h, txns: [...h.txns, abortedFirst, retry] })).toEqual([]);
  });

  it("catches a torn transaction in the final read and in a poll", () => {
    const h = cleanHistory();
    expect(anomaliesOf({ ...h, finalReads: { ...h.finalReads, "t/1": [[2, "d"]] } })).toContain(
      "torn-transaction",
    );
    nextId = 90;
    const both = txn(8, "ok", [send("t/2", "p", 0), send("t/2", "q", 1)]);
    const writer2 = txn(10, "ok", [send("t/2", "r", 2)]);
    const reader = txn(9, "ok", [
      poll({
        "t/2": [
          [0, "p"],
          [2, "r"],
        ],
      }),
    ]);
    const finalReads = {
      ...h.finalReads,
      "t/2": [
        [0, "p"],
        [1, "q"],
        [2, "r"],
      ] as Array<[number, string]>,
    };
    expect(anomaliesOf({ ...h, txns: [...h.txns, both, writer2, reader], finalReads })).toEqual([
      "torn-transaction",
    ]);
  });

  it("catches a copier that copied twice or not at all", () => {
    const h = cleanHistory();
    const copier = {
      inputValues: ["i1", "i2"],
      outputKeyPrefix: "out/",
      transform: "suffix-copied" as const,
    };
    const good = {
      ...h,
      copier,
      finalReads: {
        ...h.finalReads,
        "out/0": [
          [0, "i1:copied"],
          [1, "i2:copied"],
        ] as Array<[number, string]>,
      },
    };
    expect(anomaliesOf(good)).toEqual([]);
    const twice = {
      ...h,
      copier,
      finalReads: {
        ...h.finalReads,
        "out/0": [
          [0, "i1:copied"],
          [1, "i1:copied"],
        ] as Array<[number, string]>,
      },
    };
    expect(anomaliesOf(twice)).toContain("copier-not-exactly-once");
  });

  it("checks the copier group's output with the demo's transform", () => {
    const h = cleanHistory();
    const copier = {
      inputValues: ["in-1", "in-2"],
      outputKeyPrefix: "out/",
      transform: "demo" as const,
    };
    const good = {
      ...h,
      copier,
      finalReads: {
        ...h.finalReads,
        "out/0": [[0, "IN-1 [copied]"]],
        "out/1": [[0, "IN-2 [copied]"]],
      } as History["finalReads"],
    };
    expect(anomaliesOf(good)).toEqual([]);
    const missing = {
      ...h,
      copier,
      finalReads: { ...h.finalReads, "out/0": [[0, "IN-1 [copied]"]] } as History["finalReads"],
    };
    expect(anomaliesOf(missing)).toEqual(["copier-not-exactly-once"]);
    const suffixed = {
      ...h,
      copier,
      finalReads: {
        ...h.finalReads,
        "out/0": [
          [0, "in-1:copied"],
          [1, "in-2:copied"],
        ],
      } as History["finalReads"],
    };
    expect(anomaliesOf(suffixed)).toEqual(["copier-not-exactly-once"]);
  });

  it("lets a copier value written again by an unknown transaction that committed own it (not an aborted read)", () => {
    const h = cleanHistory();
    // A copier's transaction aborts; its retry dies inside the commit (unknown) but committed.
    const aborted = txn(7, "fail", [send("out/0", "v:copied")]);
    const retry = txn(7, "unknown", [send("out/0", "v:copied")]);
    const finalReads = { ...h.finalReads, "out/0": [[0, "v:copied"]] } as History["finalReads"];
    expect(
      anomaliesOf({ ...h, valuesMayRepeat: true, txns: [...h.txns, aborted, retry], finalReads }),
    ).toEqual([]);
    // Only failed writers: the read of the value is an aborted read.
    expect(
      anomaliesOf({ ...h, valuesMayRepeat: true, txns: [...h.txns, aborted], finalReads }),
    ).toContain("aborted-read");
  });

  it("catches money that is not conserved", () => {
    const h = cleanHistory();
    expect(
      anomaliesOf({ ...h, money: { expectedTotal: 100, finalBalances: { a: 60, b: 40 } } }),
    ).toEqual([]);
    expect(
      anomaliesOf({ ...h, money: { expectedTotal: 100, finalBalances: { a: 60, b: 41 } } }),
    ).toEqual(["money-not-conserved"]);
  });

  it("catches a committed offset that is not last polled + 1", () => {
    const h = cleanHistory();
    expect(
      anomaliesOf({
        ...h,
        offsetCommits: [{ process: 4, key: "t/0", lastPolledOffset: 3, committedOffset: 3 }],
      }),
    ).toEqual(["committed-offset-mismatch"]);
  });
  it("catches a fenced zombie's write that became visible (the zombie-producer history)", () => {
    nextId = 0;
    // The zombie committed "z-a", then its open transaction ("z-b", and "z-c0" it tried after
    // the fence) was aborted by the new instance, which committed "z-d".
    const zombie = (finalZ0: Array<[number, string]>): History => {
      nextId = 0;
      return {
        txns: [
          txn(1000, "ok", [send("z/0", "z-a", 0)]),
          txn(1000, "fail", [send("z/0", "z-b", 2), send("z/0", "z-c0"), send("z/1", "z-c1")]),
          txn(1000, "ok", [send("z/0", "z-d", 4)]),
        ],
        finalReads: { "z/0": finalZ0, "z/1": [] },
      };
    };
    expect(
      anomaliesOf(
        zombie([
          [0, "z-a"],
          [4, "z-d"],
        ]),
      ),
    ).toEqual([]);
    expect(
      anomaliesOf(
        zombie([
          [0, "z-a"],
          [2, "z-b"],
          [4, "z-d"],
        ]),
      ),
    ).toEqual(["aborted-read"]);
    expect(
      anomaliesOf(
        zombie([
          [0, "z-a"],
          [4, "z-d"],
          [6, "z-c0"],
        ]),
      ),
    ).toEqual(["aborted-read"]);
  });
});

describe("checker: write-read cycles (G1c)", () => {
  /** Two committed transactions that each read the other's write: impossible under read_committed. */
  function cycle(): History {
    nextId = 200;
    const t1 = txn(1, "ok", [send("t/0", "p", 0), poll({ "t/1": [[0, "q"]] })], 0, 50);
    const t2 = txn(2, "ok", [send("t/1", "q", 0), poll({ "t/0": [[0, "p"]] })], 0, 50);
    return {
      txns: [t1, t2],
      finalReads: { "t/0": [[0, "p"]], "t/1": [[0, "q"]] },
    };
  }

  it("finds a two-transaction cycle and names its transactions", () => {
    const r = checkHistory(cycle());
    expect(r.anomalies["g1c-cycle"]).toBe(1);
    expect(r.examples.find((e) => e.type === "g1c-cycle")?.details).toEqual({ txns: [200, 201] });
  });

  it("finds a longer cycle through an unknown transaction that the final read settled as committed", () => {
    nextId = 300;
    const a = txn(1, "ok", [send("t/0", "a", 0), poll({ "t/2": [[0, "c"]] })], 0, 90);
    const b = txn(2, "unknown", [send("t/1", "b"), poll({ "t/0": [[0, "a"]] })], 0, 90);
    const c = txn(3, "ok", [send("t/2", "c", 0), poll({ "t/1": [[0, "b"]] })], 0, 90);
    const h: History = {
      txns: [a, b, c],
      finalReads: { "t/0": [[0, "a"]], "t/1": [[0, "b"]], "t/2": [[0, "c"]] },
    };
    expect(anomaliesOf(h)).toEqual(["g1c-cycle"]);
  });

  it("accepts a chain of reads (information flows one way) and ignores aborted readers", () => {
    nextId = 400;
    const w = txn(1, "ok", [send("t/0", "w", 0)], 0, 10);
    const r1 = txn(2, "ok", [poll({ "t/0": [[0, "w"]] }), send("t/1", "r1", 0)], 20, 30);
    const r2 = txn(3, "ok", [poll({ "t/1": [[0, "r1"]] })], 40, 50);
    // An aborted reader's poll of its own later-aborted partner forms no committed cycle.
    const x = txn(4, "fail", [send("t/2", "x", 0), poll({ "t/1": [[0, "r1"]] })], 60, 70);
    const h: History = {
      txns: [w, r1, r2, x],
      finalReads: { "t/0": [[0, "w"]], "t/1": [[0, "r1"]], "t/2": [] },
    };
    expect(anomaliesOf(h)).toEqual([]);
  });
});

describe("checker: unknown outcomes", () => {
  it("accepts an unknown transaction wholly visible or wholly invisible, flags one half visible", () => {
    nextId = 500;
    const u = txn(1, "unknown", [send("t/0", "u0"), send("t/1", "u1")], 0, 10);
    const base = { txns: [u] };
    expect(anomaliesOf({ ...base, finalReads: { "t/0": [], "t/1": [] } })).toEqual([]);
    expect(
      anomaliesOf({ ...base, finalReads: { "t/0": [[0, "u0"]], "t/1": [[0, "u1"]] } }),
    ).toEqual([]);
    expect(anomaliesOf({ ...base, finalReads: { "t/0": [[0, "u0"]], "t/1": [] } })).toEqual([
      "torn-transaction",
    ]);
  });
});

describe("checker: offsets going backwards", () => {
  it("flags one reader whose polls of a partition go back, not two readers at different positions", () => {
    nextId = 600;
    const w = txn(1, "ok", [send("t/0", "a", 0), send("t/0", "b", 1)], 0, 5);
    const finalReads = {
      "t/0": [
        [0, "a"],
        [1, "b"],
      ] as Array<[number, string]>,
    };
    const readerA1 = txn(10, "ok", [poll({ "t/0": [[1, "b"]] })], 10, 11);
    const readerA2 = txn(10, "ok", [poll({ "t/0": [[0, "a"]] })], 12, 13);
    const readerB = txn(11, "ok", [poll({ "t/0": [[0, "a"]] })], 14, 15);
    expect(anomaliesOf({ txns: [w, readerA1, readerB], finalReads })).toEqual([]);
    expect(anomaliesOf({ txns: [w, readerA1, readerA2], finalReads })).toEqual([
      "non-monotonic-poll",
    ]);
  });
});

import { describe, expect, it } from "vitest";
import { gbLabel, storagePlan } from "./_storage-plan.js";

describe("storagePlan", () => {
  it("puts the RSS points at 0, 1, 2 and 4 GB for --gb 4 and stops a broker from 2 to 2.5 GB", () => {
    const plan = storagePlan(4);
    expect(plan.rssPoints.map((p) => p.label)).toEqual([
      "retained-0gb",
      "retained-1gb",
      "retained-2gb",
      "retained-4gb",
    ]);
    expect(plan.totalRecords).toBe(3_906_250);
    expect(plan.rssPoints.map((p) => p.records)).toEqual([0, 976_563, 1_953_125, 3_906_250]);
    expect(plan.stopAtRecords).toBe(1_953_125);
    expect(plan.restartAtRecords).toBe(2_441_406);
  });

  it("scales the points with --gb", () => {
    expect(storagePlan(0.05).rssPoints.map((p) => p.label)).toEqual([
      "retained-0gb",
      "retained-0.0125gb",
      "retained-0.025gb",
      "retained-0.05gb",
    ]);
  });

  it("refuses a size that is not positive", () => {
    expect(() => storagePlan(0)).toThrow(RangeError);
    expect(() => storagePlan(Number.NaN)).toThrow(RangeError);
  });
});

describe("gbLabel", () => {
  it("keeps three significant digits", () => {
    expect(gbLabel(4)).toBe("4");
    expect(gbLabel(1 / 3)).toBe("0.333");
  });
});

import { describe, expect, it } from "vitest";
import path from "node:path";
import { renderObjects } from "../../scripts/k8s/render.js";
import { lintManifests } from "../../scripts/k8s/lint.js";
import { repoRoot } from "../../scripts/k8s/repo-root.js";

describe("lint", () => {
  it("the shipped manifests are clean", () => {
    const objects = renderObjects(path.join(repoRoot(), "deploy/k8s"));
    expect(lintManifests(objects)).toEqual([]);
  });
});

import { describe, expect, it } from "vitest";
import path from "node:path";
import { renderObjects } from "../../scripts/k8s/render.js";
import { validateSchemas } from "../../scripts/k8s/schema-validate.js";
import { repoRoot } from "../../scripts/k8s/repo-root.js";

describe("schemas", () => {
  it("every rendered object validates", () => {
    const objects = renderObjects(path.join(repoRoot(), "deploy/k8s"));
    const issues = validateSchemas(objects);
    console.log(issues);
    expect(issues).toEqual([]);
  });
});

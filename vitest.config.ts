import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: [
      "libs/**/*.test.ts",
      "services/**/*.test.ts",
      "cli/**/*.test.ts",
      "scripts/**/*.test.ts",
      "test/**/*.test.ts",
      "deploy/**/*.test.ts",
    ],
    testTimeout: 120_000,
    hookTimeout: 120_000,
    // Real-process tests share two cores: run files one at a time so timings stay sane.
    fileParallelism: false,
    reporters: ["default"],
  },
});

import { defineConfig } from "tsup";

export default defineConfig({
  entry: {
    index: "src/index.ts",
    testing: "src/testing/index.ts",
    core: "src/core.ts",
    otel: "src/otel/index.ts",
    cli: "src/cli/main.ts",
  },
  format: ["esm"],
  target: "node20",
  platform: "node",
  dts: { entry: { index: "src/index.ts", testing: "src/testing/index.ts", core: "src/core.ts", otel: "src/otel/index.ts" } },
  sourcemap: true,
  clean: true,
  splitting: true,
});

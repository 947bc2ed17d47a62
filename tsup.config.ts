import { defineConfig, type Options } from "tsup";

/**
 * The page `turnlog view` serves (src/view-ui): Preact and dagre bundled by esbuild into
 * `dist/view/` (app.js, app.css, and index.html copied from src/view-ui/public), so the page loads
 * nothing from the internet. Test helpers build it with these options into a folder of their own.
 */
export const viewBuild = {
  entry: { app: "src/view-ui/main.tsx" },
  outDir: "dist/view",
  publicDir: "src/view-ui/public",
  format: ["esm"],
  target: "es2022",
  platform: "browser",
  minify: true,
  sourcemap: false,
  splitting: false,
  dts: false,
  clean: true,
} satisfies Options;

/**
 * Dependencies bundled into dist/ rather than imported from node_modules at run time: the small
 * ones every import of turnlog needs. Loaded from node_modules, zod alone is 95 modules (its entry
 * pulls in all of its locales), and immutable, shell-quote, safe-stable-stringify and
 * fastest-levenshtein are CommonJS, which Node lexes whole when ESM imports them; together they
 * were most of `import("turnlog")`'s start-up (docs/performance.md, "Start-up"). Bundled, esbuild
 * keeps what is used, in one module. They stay in `dependencies` for their types. The heavy,
 * optional ones (pg, level, the provider SDKs, the MCP SDK, gpt-tokenizer) stay external and load
 * on first use.
 */
const bundledDependencies = ["zod", "xstate", "immer", "immutable", "canonicalize", "safe-stable-stringify", "shell-quote", "fastest-levenshtein"];

export default defineConfig([
  {
    entry: {
      index: "src/index.ts",
      testing: "src/testing/index.ts",
      core: "src/core.ts",
      otel: "src/otel/index.ts",
      "ai-sdk": "src/ai-sdk.ts",
      cli: "src/cli/main.ts",
    },
    format: ["esm"],
    target: "node20",
    platform: "node",
    dts: { entry: { index: "src/index.ts", testing: "src/testing/index.ts", core: "src/core.ts", otel: "src/otel/index.ts", "ai-sdk": "src/ai-sdk.ts" } },
    sourcemap: true,
    // dist/view is the browser build's, which runs alongside.
    clean: ["!view/**"],
    splitting: true,
    noExternal: bundledDependencies,
  },
  viewBuild,
]);

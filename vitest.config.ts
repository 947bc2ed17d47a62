import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "property-tests/**/*.test.ts"],
    setupFiles: ["test/support/isolated-user-directories.ts"],
    globalSetup: ["test/support/postgres-global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Every event the runtime builds is checked against its schema before it is appended (session-store.ts).
    env: { TURNLOG_CHECK_EVENTS: "1" },
  },
});

import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "property-tests/**/*.test.ts"],
    setupFiles: ["test/support/isolated-user-directories.ts"],
    globalSetup: ["test/support/postgres-global-setup.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});

import { afterEach, expect, it, vi } from "vitest";
import { postgresFamily } from "../../soak/families/postgres.js";
import { describeWithPostgres, requirePostgresUrl } from "../support/postgres.js";

/**
 * The CI-sized run of soak family `postgres` (soak/families/postgres.ts): host processes SIGKILLed
 * at seeded points on a schema of the test server, and a restart of a server of its own under
 * running hosts, with the crash test's invariants after each scenario. `npm run soak -- --family
 * postgres` runs the same code at full count.
 */
const seed = 20_261_205;

describeWithPostgres("soak family postgres (CI size)", () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it(`kills hosts and restarts a server at ${postgresFamily.ciCount} seeded points, every invariant holding (seed ${seed})`, async () => {
    // The kill scenarios run on the test server, as the other PostgreSQL suites do.
    vi.stubEnv("TURNLOG_TEST_PG_URL", requirePostgresUrl());
    const result = await postgresFamily.run({ seed, count: postgresFamily.ciCount, log: () => {} });
    expect(result.failures, result.failures.join("\n\n")).toEqual([]);
    expect(result.failed).toBe(0);
    expect(result.passed).toBe(postgresFamily.ciCount);
    expect(result.summary).toMatch(/\b1 server restarts \(.*; 1 with a host running\)/);
  }, 180_000);
});

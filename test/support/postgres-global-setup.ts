/**
 * vitest's global setup for the PostgreSQL suites: uses `TURNLOG_TEST_PG_URL` when it is set (as
 * `.ci/run` does), otherwise starts a throw-away server when this machine has the binaries, and
 * otherwise says loudly that the PostgreSQL suites will not run. Under CI (`CI` set) a missing
 * server is an error: CI never skips them.
 */
import type { TestProject } from "vitest/node";
// @ts-expect-error: a plain ES module script without types (scripts/ is not compiled).
import { postgresBinDirectory, startPostgres } from "../../scripts/postgres-server.mjs";

declare module "vitest" {
  export interface ProvidedContext {
    turnlogPostgresUrl: string | undefined;
  }
}

export default async function setup(project: TestProject): Promise<(() => void) | undefined> {
  const given = process.env.TURNLOG_TEST_PG_URL;
  if (given !== undefined && given !== "") {
    project.provide("turnlogPostgresUrl", given);
    return undefined;
  }
  if ((postgresBinDirectory() as string | undefined) === undefined) {
    if (process.env.CI !== undefined && process.env.CI !== "" && process.env.CI !== "false") {
      throw new Error("CI: no PostgreSQL server (no TURNLOG_TEST_PG_URL, no initdb on PATH or in /usr/lib/postgresql/*/bin); the PostgreSQL suites must run");
    }
    const banner = "!".repeat(78);
    console.warn(`\n${banner}\n!! The PostgreSQL suites did NOT run: no server binaries and no TURNLOG_TEST_PG_URL.\n!! Install PostgreSQL (Debian: apt-get install postgresql) or set TURNLOG_TEST_PG_URL.\n${banner}\n`);
    project.provide("turnlogPostgresUrl", undefined);
    return undefined;
  }
  const server = (await startPostgres({ fast: true })) as { url: string; stop(): void };
  project.provide("turnlogPostgresUrl", server.url);
  return () => server.stop();
}

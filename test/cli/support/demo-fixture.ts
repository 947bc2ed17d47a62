import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect } from "vitest";
import { ensureBuiltCli, runTurnlog } from "./turnlog-bin.js";

/**
 * A demo session recorded by the built bin in a temporary directory of its own, for CLI tests:
 * call inside a test file, then use `fixture.turnlog(...)`, `fixture.sessionId`, `fixture.logDir`.
 */
export function useDemoSession(name: string) {
  const fixture = {
    workDir: "",
    sessionId: "",
    logDir: "log",
    turnlog: (...args: string[]) => runTurnlog(args, { cwd: fixture.workDir }),
  };
  beforeAll(async () => {
    await ensureBuiltCli();
    fixture.workDir = await mkdtemp(path.join(os.tmpdir(), `turnlog-${name}-`));
    const demo = await fixture.turnlog("demo", "--dir", fixture.logDir);
    expect(demo.code).toBe(0);
    fixture.sessionId = /session\s+(demo-\S+)/.exec(demo.stdout)?.[1] ?? "";
  }, 120_000);
  afterAll(async () => {
    if (fixture.workDir !== "") await rm(fixture.workDir, { recursive: true, force: true });
  });
  return fixture;
}

/** A user's mistake is one line on stderr, prefixed `turnlog: `, and never a stack trace. */
export function expectOneCleanLine(stderr: string): void {
  expect(stderr.trimEnd().split("\n")).toHaveLength(1);
  expect(stderr).toMatch(/^turnlog: /);
  expect(stderr).not.toMatch(/\bat .+:\d+:\d+/);
}

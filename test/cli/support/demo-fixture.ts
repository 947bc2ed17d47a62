import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect } from "vitest";
import { ensureBuiltCli, runTurnlog, type TurnlogRun } from "./turnlog-bin.js";
import { runTurnlogInProcess } from "./turnlog-in-process.js";

/** How {@link useDemoSession} runs `turnlog`. */
export interface DemoSessionOptions {
  /**
   * `"in-process"` (the default): the demo and `fixture.turnlog(...)` run through `runCli` in the
   * test's own process, for tests about a command's logic; `"process"`: through the built bin, a
   * new Node process each, for tests about the bin itself.
   */
  via?: "in-process" | "process";
}

/**
 * A demo session recorded in a temporary directory of its own, for CLI tests: call inside a test
 * file, then use `fixture.turnlog(...)`, `fixture.sessionId`, `fixture.logDir`. The built bin is
 * made ready either way, for the tests that also start one (`turnlog view`).
 */
export function useDemoSession(name: string, options: DemoSessionOptions = {}) {
  const inProcess = (options.via ?? "in-process") === "in-process";
  const fixture = {
    workDir: "",
    sessionId: "",
    logDir: "log",
    turnlog: (...args: string[]): Promise<TurnlogRun> => (inProcess ? runTurnlogInProcess(args, { cwd: fixture.workDir }) : runTurnlog(args, { cwd: fixture.workDir })),
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

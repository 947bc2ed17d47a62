import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ConfigError, createRuntime, TurnlogError } from "../../src/index.js";
import type { RuntimeOptions } from "../../src/index.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";

/**
 * `createRuntime` checks what the host passed before anything starts: a typo or a bad value is
 * one `ConfigError` with one readable line per problem, never a raw ZodError and never a
 * silently dropped option.
 */

// Every option RuntimeOptions declares is one the check knows (else createRuntime would refuse it), and vice versa.
type CheckedOptions = keyof import("zod").infer<typeof import("../../src/runtime/runtime-options-schema.js").RuntimeOptionsSchema>;
const sameKeys: [Exclude<keyof RuntimeOptions, CheckedOptions>, Exclude<CheckedOptions, keyof RuntimeOptions>] extends [never, never] ? true : false = true;
void sameKeys;

const directories: string[] = [];
afterAll(async () => {
  await Promise.all(directories.map((directory) => rm(directory, { recursive: true, force: true })));
});

/** The problems `createRuntime` reports for these options (fails the test if it accepts them). */
async function problemsOf(options: Record<string, unknown>): Promise<readonly string[]> {
  const error = await createRuntime({ log: new MemoryEventLog(), provider: scriptedProvider([]), ...options } as RuntimeOptions).then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  if (!ConfigError.isInstance(error)) throw new Error(`expected a ConfigError, got ${String(error)}`);
  expect(error.code).toBe("TURNLOG_CONFIG");
  expect(error).toBeInstanceOf(TurnlogError);
  expect(error.message).toBe(error.problems.join("\n"));
  return error.problems;
}

describe("createRuntime's options", () => {
  it("names a misspelt option and the one that was meant", async () => {
    expect(await problemsOf({ policy: { approvalmode: "auto-edit" } })).toEqual(["policy.approvalmode: unknown option (did you mean approvalMode?)"]);
    expect(await problemsOf({ budgets: { maxIteration: 10 } })).toEqual(["budgets.maxIteration: unknown option (did you mean maxIterations?)"]);
    expect(await problemsOf({ concurency: 2 })).toEqual(["concurency: unknown option (did you mean concurrency?)"]);
    expect(await problemsOf({ policy: { workspace: { trusted: true, rooot: "/srv" } } })).toEqual(["policy.workspace.rooot: unknown option (did you mean root?)"]);
    expect(await problemsOf({ colour: "red" })).toEqual(["colour: unknown option"]);
  });

  it("rejects bad values with where they are, one line each", async () => {
    const problems = await problemsOf({
      policy: { approvalMode: "yolo", deny: [{ tool: "x", risk: "scary" }] },
      budgets: { maxIterations: 0, wallClockMs: "5m" },
      providerRetry: { baseDelayMs: -1 },
      upgradeSessions: "always",
      decisionsVersion: 99,
    });
    expect(problems).toHaveLength(7);
    for (const prefix of ["policy.approvalMode: ", "policy.deny[0].risk: ", "budgets.maxIterations: ", "budgets.wallClockMs: ", "providerRetry.baseDelayMs: ", "upgradeSessions: ", "decisionsVersion: "]) {
      expect(problems.filter((problem) => problem.startsWith(prefix))).toHaveLength(1);
    }
    expect(problems.every((problem) => !problem.includes("\n"))).toBe(true);
  });

  it("checks the provider's shape at once, not at the first openSession", async () => {
    const provider = { ...scriptedProvider([]), format: "openai" };
    expect(await problemsOf({ provider })).toEqual([expect.stringMatching(/^provider\.format: .*"openai-chat".*"anthropic-messages"/)]);
    expect(await problemsOf({ provider: { id: "p", format: "openai-chat" } })).toEqual(["provider.complete: expected a function"]);
    expect(await problemsOf({ provider: undefined })).toEqual([expect.stringMatching(/^provider: /)]);
  });

  it("never quotes a secret it refuses", async () => {
    const problems = await problemsOf({ secrets: ["short"] });
    expect(problems).toEqual([expect.stringMatching(/^secrets\[0\]: .*at least 8 characters/)]);
    expect(problems.join("\n")).not.toContain("short\"");
  });

  it("fails before any MCP server starts or the log is opened", async () => {
    const directory = await mkdtemp(join(tmpdir(), "turnlog-options-"));
    directories.push(directory);
    const started = join(directory, "server-started");
    const logDirectory = join(directory, "log");
    const previous = process.env.TURNLOG_DIR;
    process.env.TURNLOG_DIR = logDirectory;
    try {
      const error = await createRuntime({
        provider: scriptedProvider([]),
        // A server that, were it started, would leave a file behind.
        mcpServers: [{ name: "marker", command: process.execPath, args: ["-e", `require("node:fs").writeFileSync(${JSON.stringify(started)}, "")`] }],
        policy: { approvalmode: "full-auto" } as RuntimeOptions["policy"],
      }).catch((thrown: unknown) => thrown);
      expect(ConfigError.isInstance(error)).toBe(true);
    } finally {
      if (previous === undefined) delete process.env.TURNLOG_DIR;
      else process.env.TURNLOG_DIR = previous;
    }
    await expect(stat(started)).rejects.toThrow(/ENOENT/);
    await expect(stat(logDirectory)).rejects.toThrow(/ENOENT/);
  });

  it("accepts every documented option, and undefined as 'the default'", async () => {
    const runtime = await createRuntime({
      log: new MemoryEventLog(),
      provider: scriptedProvider([]),
      tools: [],
      toolProviders: [{ name: "none", phase: "post-tool-executor", register: () => undefined }],
      mcpServers: [],
      policy: { approvalMode: "ask", workspace: { root: process.cwd(), trusted: false }, deny: [{ tool: "x", reason: "no" }], allow: [{ risk: "read-only-local" }], blockedRiskClasses: ["sandbox-escape"] },
      budgets: { maxIterations: 45, maxToolCalls: 100, maxRepeatedFailures: 5, wallClockMs: 300_000, maxToolCallsPerTurn: 10 },
      concurrency: 4,
      providerAttempts: 3,
      providerRetry: { baseDelayMs: 500, maxDelayMs: 8000 },
      clock: { now: () => 0 },
      ids: { next: () => "id" },
      history: { maxTokens: 100_000, system: "be brief" },
      onDelta: () => undefined,
      decisionsVersion: 1,
      upgradeSessions: "never",
      secrets: ["a-long-enough-secret"],
      seals: undefined,
    });
    await runtime.close();
  });
});

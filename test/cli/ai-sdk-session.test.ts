import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LevelEventLog } from "../../src/index.js";
import type { RecordedEvent } from "../../src/index.js";
import { aiSdkViolations } from "../support/history-validators.js";
import { ensureBuiltCli, runTurnlog } from "./support/turnlog-bin.js";

/*
 * `turnlog history` and `turnlog replay`, through the built bin, on a session of the `ai-sdk`
 * provider format: the golden log of @ai-sdk/openai on the Responses API with encrypted reasoning
 * (test/fixtures/logs/v7-ai-sdk-responses-session.json), copied into a LevelDB log.
 */

const sessionId = "golden-ai-sdk";
let logDir: string;
let golden: RecordedEvent[];

beforeAll(async () => {
  logDir = await mkdtemp(join(tmpdir(), "turnlog-ai-sdk-cli-"));
  golden = JSON.parse(await readFile(new URL("../fixtures/logs/v7-ai-sdk-responses-session.json", import.meta.url), "utf8")) as RecordedEvent[];
  const log = await LevelEventLog.open(logDir);
  await log.appendToStream(`session-${sessionId}`, golden.map(({ type, data }) => ({ type, data })));
  await log.close();
  await ensureBuiltCli();
}, 120_000);
afterAll(async () => {
  await rm(logDir, { recursive: true, force: true });
});

const turnlog = (...args: string[]) => runTurnlog([...args, "--dir", logDir], { cwd: logDir, env: { NO_COLOR: "1", COLUMNS: "160" } });

describe("an ai-sdk session on the command line", () => {
  it("turnlog history --format ai-sdk prints the request a next turn would send: each tool turn's reasoning with its encrypted content, every call answered by its ID; another format gets no echo", async () => {
    const run = await turnlog("history", sessionId, "--format", "ai-sdk", "--json");
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    const output = JSON.parse(run.stdout) as { format: string; messages: { role: string; content: string | Record<string, unknown>[] }[] };
    expect(output.format).toBe("ai-sdk");
    expect(aiSdkViolations(output.messages)).toEqual([]);
    const parts = output.messages.flatMap((entry) => (Array.isArray(entry.content) ? entry.content : []));
    expect(parts.filter((part) => part.type === "reasoning").map((part) => part.providerOptions)).toEqual([
      { openai: { itemId: "rs_golden_1", reasoningEncryptedContent: "gAAAAB-enc-golden-one" } },
      { openai: { itemId: "rs_golden_2", reasoningEncryptedContent: "gAAAAB-enc-golden-two" } },
    ]);
    const calls = parts.filter((part) => part.type === "tool-call").map((part) => part.toolCallId);
    expect(calls).toEqual(["call_golden_read", "call_golden_write"]);
    expect(parts.filter((part) => part.type === "tool-result").map((part) => part.toolCallId)).toEqual(calls);

    // The echo goes only to the format it came from: the same session as Chat Completions carries none.
    const chat = await turnlog("history", sessionId, "--format", "openai-chat", "--json");
    expect(chat.code).toBe(0);
    expect(chat.stdout).toContain("call_golden_write");
    expect(chat.stdout).not.toContain("gAAAAB-enc-golden");
  });

  it("turnlog replay says identical and exits 0, from the tools' recorded definitions; turnlog show names the ai-sdk provider and its turns", async () => {
    const run = await turnlog("replay", sessionId);
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout).toContain("tools replayed from their recorded definitions (the host's code is not here): read_file, write_file");
    expect(run.stdout).toMatch(/^identical: \d+ decisions recomputed, 0 divergences$/m);
    const json = await turnlog("replay", sessionId, "--json");
    expect(JSON.parse(json.stdout)).toMatchObject({ identical: true, divergences: [], changes: [] });

    const show = await turnlog("show", sessionId);
    expect(show.code).toBe(0);
    expect(show.stdout).toContain("provider ai-sdk:openai.responses:gpt-5 (ai-sdk)");
    expect(show.stdout).toMatch(/write_file .* approved by alice +succeeded/);
    expect(show.stdout).toContain("final answer › Wrote RELEASE.md for version 1.4.2 (alice approved the write).");
  });
});

/**
 * The corpus of credential formats, judged by effect (issue 30, "Secrets"; docs/security.md, "The
 * corpus"): every entry goes through a real runtime on a real LevelDB log on disk — as a tool
 * argument, and back as the tool's output — and then the log directory is read as bytes and every
 * event through the log's read API. An entry is kept out of the log when its secret's bytes (as
 * they are, or escaped inside JSON) are nowhere. At least 95% must be; the measured figure is
 * printed. Every benign twin goes the same way and must come back byte for byte.
 */
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createRuntime, defineTool, LevelEventLog } from "../../../src/index.js";
import type { RecordedEvent } from "../../../src/index.js";
import { scriptedProvider } from "../../../src/testing/index.js";
import { benignTwins, credentialCorpus } from "./credential-corpus.js";

/** The forms a value takes in the log's files: as it is, and escaped inside a JSON string. */
function forms(value: string): string[] {
  return [...new Set([value, JSON.stringify(value).slice(1, -1)])];
}

describe("a broad corpus of credential formats, through a real runtime and an on-disk log", () => {
  let workDir: string;
  let logDir: string;
  const echoed: string[] = [];
  let fileBytes: Buffer[] = [];
  let events: RecordedEvent[] = [];

  beforeAll(async () => {
    workDir = await mkdtemp(join(tmpdir(), "turnlog-credential-corpus-"));
    logDir = join(workDir, "log");
    const echo = defineTool({
      name: "echo",
      description: "prints its text back",
      risk: "read-only-local",
      input: z.object({ text: z.string() }),
      run: ({ text }) => {
        echoed.push(text);
        return { ok: true, content: text };
      },
    });
    const texts = [...credentialCorpus.map((entry) => entry.text), ...benignTwins.map((twin) => twin.text)];
    const provider = scriptedProvider([
      { content: "Checking each file.", toolCalls: texts.map((text, index) => ({ id: `call_${index}`, name: "echo", arguments: JSON.stringify({ text }) })) },
      { content: "Done." },
    ]);
    const log = await LevelEventLog.open(logDir, { durability: "sync" });
    const runtime = await createRuntime({ log, provider, tools: [echo], policy: { approvalMode: "ask" }, budgets: { maxToolCalls: 1000, maxIterations: 10, maxRepeatedFailures: 5 } });
    try {
      const session = await runtime.openSession("corpus");
      const result = await session.send("Read the credentials files.");
      expect(result, result.reason).toMatchObject({ status: "completed" });
    } finally {
      await runtime.close();
      await log.close();
    }
    const files = (await readdir(logDir, { withFileTypes: true, recursive: true })).filter((entry) => entry.isFile());
    fileBytes = await Promise.all(files.map((file) => readFile(join(file.parentPath, file.name))));
    const reopened = await LevelEventLog.open(logDir);
    try {
      for await (const event of reopened.readAll()) events.push(event);
    } finally {
      await reopened.close();
    }
  }, 120_000);

  afterAll(async () => {
    await rm(workDir, { recursive: true, force: true });
  });

  /** Whether `value` is anywhere in the log: in a file's bytes, or in an event read back. */
  function inLog(value: string): boolean {
    const eventText = events.map((event) => JSON.stringify(event)).join("\n");
    return forms(value).some((form) => eventText.includes(form) || fileBytes.some((bytes) => bytes.includes(Buffer.from(form, "utf8"))));
  }

  it("really ran every entry: each tool got its real text, and the log holds the events", () => {
    expect(echoed).toHaveLength(credentialCorpus.length + benignTwins.length);
    for (const entry of credentialCorpus) expect(echoed, entry.format).toContain(entry.text);
    // Before redaction every part was there to leak: the tools got and printed them all.
    for (const entry of credentialCorpus) for (const part of entry.parts) expect(echoed.some((text) => forms(part).some((form) => text.includes(form))), entry.format).toBe(true);
    expect(events.filter((event) => event.type === "turn.tool.succeeded")).toHaveLength(echoed.length);
    expect(fileBytes.reduce((total, bytes) => total + bytes.length, 0)).toBeGreaterThan(10_000);
  });

  it("has a broad, documented corpus: 100+ formats, each with its name, place and a distinct fake value", () => {
    expect(credentialCorpus.length).toBeGreaterThanOrEqual(100);
    expect(new Set(credentialCorpus.map((entry) => entry.format)).size).toBe(credentialCorpus.length);
    expect(new Set(credentialCorpus.map((entry) => entry.secret)).size).toBe(credentialCorpus.length);
    for (const entry of credentialCorpus) {
      expect(entry.seenIn, entry.format).not.toBe("");
      for (const part of entry.parts) expect(entry.text.includes(part) || entry.text.includes(JSON.stringify(part).slice(1, -1)), `${entry.format}: ${part}`).toBe(true);
    }
  });

  it("keeps at least 95% of the corpus out of the log, measured on the raw files and the events", () => {
    const leaked = credentialCorpus.filter((entry) => entry.parts.some((part) => inLog(part)));
    const kept = credentialCorpus.length - leaked.length;
    const percentage = (100 * kept) / credentialCorpus.length;
    console.log(
      `credential corpus: ${kept} of ${credentialCorpus.length} kept out of the log (${percentage.toFixed(1)}%); reached it: ${leaked.map((entry) => entry.format).join(", ") || "none"}`,
    );
    expect(percentage).toBeGreaterThanOrEqual(95);
  });

  it("leaves every benign twin readable, in the logged argument and the logged output", () => {
    const outputs = events.filter((event) => event.type === "turn.tool.succeeded").map((event) => (event.data as { output: string }).output);
    const responded = events.find((event) => event.type === "turn.provider.responded");
    const argumentsTexts = ((responded?.data as { toolCalls?: { argumentsText: string }[] } | undefined)?.toolCalls ?? []).map((call) => call.argumentsText);
    for (const twin of benignTwins) {
      expect(outputs, twin.name).toContain(twin.text);
      expect(argumentsTexts, twin.name).toContain(JSON.stringify({ text: twin.text }));
    }
  });
});

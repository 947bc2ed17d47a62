/**
 * `turnlog view` on a session of the `ai-sdk` provider format, in a real headless Chromium: the
 * golden log of @ai-sdk/openai on the Responses API with encrypted reasoning
 * (test/fixtures/logs/v7-ai-sdk-responses-session.json), copied into a LevelDB log the built bin
 * serves. The page names the provider and its format, draws both tool calls, and lists each turn's
 * answer with the reasoning its echo holds and the final answer.
 */
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { LevelEventLog } from "../../src/index.js";
import type { RecordedEvent } from "../../src/index.js";
import { ensureBuiltCli, ensureBuiltView } from "../cli/support/turnlog-bin.js";
import { startView, type ViewProcess } from "../cli/support/view-process.js";
import { describeWithChromium, launchChromium } from "./support/chromium.js";

const sessionId = "golden-ai-sdk";

describeWithChromium("turnlog view of an ai-sdk session in a real Chromium", () => {
  let workDir: string;
  let browser: Browser;
  let view: ViewProcess;
  let page: Page;
  const pageErrors: string[] = [];

  beforeAll(async () => {
    workDir = await mkdtemp(path.join(os.tmpdir(), "turnlog-view-ai-sdk-"));
    const golden = JSON.parse(await readFile(new URL("../fixtures/logs/v7-ai-sdk-responses-session.json", import.meta.url), "utf8")) as RecordedEvent[];
    const log = await LevelEventLog.open(path.join(workDir, "log"));
    await log.appendToStream(`session-${sessionId}`, golden.map(({ type, data }) => ({ type, data })));
    await log.close();
    const [launched] = await Promise.all([launchChromium(), ensureBuiltCli(), ensureBuiltView()]);
    browser = launched;
    view = await startView([sessionId, "--dir", "log", "--interval", "50"], { cwd: workDir });
    page = await (await browser.newContext({ viewport: { width: 1400, height: 1000 } })).newPage();
    page.on("console", (message) => {
      if (message.type() === "error") pageErrors.push(message.text());
    });
    page.on("pageerror", (error) => pageErrors.push(error.message));
    await page.goto(view.url);
    await page.locator(".timeline [data-call-id]").first().waitFor();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    if (view !== undefined) expect(await view.stop()).toBe(0);
    if (workDir !== undefined) await rm(workDir, { recursive: true, force: true });
  });

  it("shows the provider and its format, both tool calls by decision, each answer's reasoning, and the final answer", async () => {
    expect(await page.locator('[data-field="session-provider"]').textContent()).toBe("ai-sdk:openai.responses:gpt-5 (ai-sdk)");
    expect(await page.locator('[data-field="session-status"]').textContent()).toBe("completed");

    const bars = page.locator(".timeline [data-call-id]");
    expect(await bars.evaluateAll((elements) => elements.map((element) => [element.getAttribute("data-call-id"), element.getAttribute("data-decision")]))).toEqual([
      ["call_golden_read", "allow"],
      ["call_golden_write", "ask"],
    ]);
    for (const callId of ["call_golden_read", "call_golden_write"]) expect(await page.locator(`.timeline [data-call-id="${callId}"]`).isVisible(), callId).toBe(true);

    const answers = page.locator(".provider-answers [data-answer-turn]");
    expect(await answers.evaluateAll((elements) => elements.map((element) => [element.getAttribute("data-answer-turn"), element.getAttribute("data-finish-reason")]))).toEqual([
      ["turn-1", "tool_calls"],
      ["turn-2", "tool_calls"],
      ["turn-3", "stop"],
    ]);
    const reasoning = async (turnId: string) => page.locator(`[data-answer-turn="${turnId}"] [data-field="reasoning"] li`).allTextContents();
    expect(await reasoning("turn-1")).toEqual(["The version is in package.json; read it first."]);
    // The second reasoning item had no summary: only its encrypted content travels, and the page says so.
    expect(await reasoning("turn-2")).toEqual(["(encrypted reasoning)"]);
    expect(await reasoning("turn-3")).toEqual(["The note is written.", "Answering."]);
    expect(await page.locator('[data-answer-turn="turn-2"] [data-field="answer-text"]').textContent()).toBe("Version 1.4.2. Writing the release note.");
    const finalAnswer = page.locator('[data-answer-turn="turn-3"] [data-field="answer-text"]');
    expect(await finalAnswer.isVisible()).toBe(true);
    expect(await finalAnswer.textContent()).toBe("Wrote RELEASE.md for version 1.4.2 (alice approved the write).");
    // The encrypted content itself is for the provider, not for a person.
    expect(await page.locator("body").textContent()).not.toContain("gAAAAB-enc-golden");
    expect(pageErrors).toEqual([]);
  });
});

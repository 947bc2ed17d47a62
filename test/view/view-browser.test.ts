/**
 * `turnlog view` in a real headless Chromium: the built bin serves a demo log, and the page is
 * driven as a person would use it — and every request the browser makes is recorded.
 */
import { execFile } from "node:child_process";
import { mkdir } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { initialTransition, transition, type SnapshotFrom } from "xstate";
import { providerTurnMachine } from "../../machines/provider-turn.machine.js";
import type { TurnEvent } from "../../src/contracts/events.js";
import type { RecordedEvent } from "../../src/log/event-log.js";
import { openLog, type AuditRow, type LogReader, type SessionView } from "../../src/reader/index.js";
import { useDemoSession } from "../cli/support/demo-fixture.js";
import { ensureBuiltView, repoRoot } from "../cli/support/turnlog-bin.js";
import { startView, type ViewProcess } from "../cli/support/view-process.js";
import { describeWithChromium, launchChromium } from "./support/chromium.js";

const run = promisify(execFile);

/** The states each turn went through, folded here with XState's own pure functions (independently of the view). */
function statesByTurn(events: readonly RecordedEvent[]): Map<string, string[]> {
  const turns = new Map<string, { states: string[]; snapshot: SnapshotFrom<typeof providerTurnMachine> }>();
  for (const event of events) {
    if (!event.type.startsWith("turn.")) continue;
    const data = event.data as { turnId: string; turnSeq: number; iteration: number };
    if (event.type === "turn.started") {
      const [snapshot] = initialTransition(providerTurnMachine, { turnId: data.turnId, turnSeq: data.turnSeq, iteration: data.iteration, maxAttempts: 3 });
      turns.set(data.turnId, { states: [String(snapshot.value)], snapshot });
      continue;
    }
    const turn = turns.get(data.turnId);
    if (turn === undefined) continue;
    const [next] = transition(providerTurnMachine, turn.snapshot, { type: event.type, data: event.data } as TurnEvent);
    turn.snapshot = next;
    // Events that keep the state (a tool started, one of several answers) are no step of the path; the demo re-enters no state.
    if (String(next.value) !== turn.states.at(-1)) turn.states.push(String(next.value));
  }
  return new Map([...turns].map(([turnId, turn]) => [turnId, turn.states]));
}

describeWithChromium("turnlog view in a real Chromium", () => {
  const demo = useDemoSession("view-browser");
  let browser: Browser;
  let view: ViewProcess;
  let screenshots: string;
  /** Every URL any page of this file asked for. */
  const requests: string[] = [];
  /** Console errors (a CSP violation is one) and uncaught exceptions of every page. */
  const pageErrors: string[] = [];
  const contexts: BrowserContext[] = [];
  const logDir = () => path.join(demo.workDir, demo.logDir);

  async function newPage(): Promise<Page> {
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    contexts.push(context);
    context.on("request", (request) => requests.push(request.url()));
    const page = await context.newPage();
    page.on("console", (message) => {
      if (message.type() === "error") pageErrors.push(`${page.url()}: ${message.text()}`);
    });
    page.on("pageerror", (error) => pageErrors.push(`${page.url()}: ${error.message}`));
    return page;
  }

  /** The session's page, opened from the URL turnlog view printed, with its timeline drawn. */
  async function openSession(): Promise<Page> {
    const page = await newPage();
    await page.goto(view.url);
    await page.locator(".timeline [data-call-id]").first().waitFor();
    return page;
  }

  async function withReader<T>(work: (reader: LogReader) => Promise<T>): Promise<T> {
    // The view never holds the log's lock, so the test may open it.
    const reader = await openLog({ dir: logDir() });
    try {
      return await work(reader);
    } finally {
      await reader.close();
    }
  }

  beforeAll(async () => {
    screenshots = path.join(demo.workDir, "screenshots");
    await mkdir(screenshots, { recursive: true });
    const [launched] = await Promise.all([launchChromium(), ensureBuiltView()]);
    browser = launched;
    view = await startView([demo.sessionId, "--dir", demo.logDir, "--interval", "50"], { cwd: demo.workDir });
  }, 120_000);

  afterAll(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    if (view !== undefined) expect(await view.stop()).toBe(0);
  });

  it("shows the demo session with every call visible and coloured by its decision", async () => {
    const audit: AuditRow[] = await withReader((reader) => reader.audit(demo.sessionId));
    const page = await openSession();
    // The token went into a cookie; the address bar no longer shows it.
    expect(page.url()).not.toContain("token=");
    expect(page.url()).toContain(`#/session/${demo.sessionId}`);
    const bars = page.locator(".timeline [data-call-id]");
    expect(await bars.count()).toBe(audit.length);
    const colours = new Map<string, Set<string>>();
    for (const row of audit) {
      const bar = page.locator(`.timeline [data-call-id="${row.callId}"]`);
      expect(await bar.count(), row.callId).toBe(1);
      expect(await bar.isVisible(), row.callId).toBe(true);
      const box = await bar.boundingBox();
      expect(box?.width ?? 0, row.callId).toBeGreaterThanOrEqual(8);
      expect(box?.height ?? 0, row.callId).toBeGreaterThanOrEqual(8);
      const decision = row.decision ?? "rejected";
      expect(await bar.getAttribute("data-decision"), row.callId).toBe(decision);
      const colour = await bar.evaluate((element) => getComputedStyle(element).backgroundColor);
      colours.set(decision, (colours.get(decision) ?? new Set()).add(colour));
    }
    // One colour per decision, and a different one for each.
    expect([...colours.keys()].sort()).toEqual(["allow", "ask", "block", "rejected"]);
    for (const set of colours.values()) expect(set.size).toBe(1);
    expect(new Set([...colours.values()].map((set) => [...set][0])).size).toBe(colours.size);
    // The waits for a person are drawn with who answered, and the budget stop with its reason.
    expect(await page.locator(".timeline [data-wait-for]").count()).toBe(audit.filter((row) => row.decision === "ask").length);
    await expect.poll(() => page.locator(".timeline .answer").allTextContents()).toContainEqual(expect.stringContaining("by demo-user"));
    expect(await page.locator('.timeline [data-end-mark="stop"]').getAttribute("data-reason")).toBe("budget:max-iterations");
    expect(await page.locator(".legend").textContent()).toMatch(/allow.*ask.*deny.*block.*rejected/s);
    await page.locator("[data-field=verdict]").waitFor();
    expect(await page.locator("[data-field=verdict]").textContent()).toBe("identical");
    await page.screenshot({ path: path.join(screenshots, "session.png"), fullPage: true });
  });

  it("moves the position slider and shows the state there, as LogReader.view gives it", async () => {
    const page = await openSession();
    const slider = page.locator("[data-control=position]");
    const shown = async (at: number, expected: SessionView) => {
      const details = page.locator(`[data-shown-position="${at}"]`);
      await details.waitFor();
      expect(await details.locator("[data-field=status]").textContent()).toBe(expected.status);
      expect(await details.locator("[data-field=machine-state]").getAttribute("data-value")).toBe(expected.machineState ?? "");
      expect(Number(await details.locator("[data-field=messages]").textContent())).toBe(expected.state.messages.length);
      expect(Number(await details.locator("[data-field=calls]").textContent())).toBe(expected.state.calls.size);
      expect(await details.locator("[data-field=event-type]").textContent()).toBe(expected.events.at(-1)?.type);
      expect(Number(await details.locator("[data-field=pending]").getAttribute("data-count"))).toBe(expected.pendingApprovals.length);
      return (await details.textContent()) ?? "";
    };
    const { early, held, end } = await withReader(async (reader) => ({
      early: await reader.view(demo.sessionId, { at: 2 }),
      held: await reader.view(demo.sessionId, { at: 11 }),
      end: await reader.view(demo.sessionId),
    }));
    expect(held.machineState).toBe("awaitingApproval");
    const atEnd = await shown(end.position, end);
    await slider.focus();
    await page.keyboard.press("Home");
    await page.keyboard.press("ArrowRight");
    const atEarly = await shown(2, early);
    for (let step = 2; step < 11; step += 1) await page.keyboard.press("ArrowRight");
    await shown(11, held);
    expect(await page.locator('[data-shown-position="11"] [data-field=pending] [data-call-id]').count()).toBe(1);
    await page.screenshot({ path: path.join(screenshots, "position-11.png"), fullPage: true });
    await page.keyboard.press("End");
    expect(await shown(end.position, end)).toBe(atEnd);
    expect(atEarly).not.toBe(atEnd);
  });

  it("draws the turn machine from its definition and highlights each turn's path", async () => {
    const events = await withReader((reader) => reader.events(demo.sessionId));
    const expected = statesByTurn(events);
    const page = await openSession();
    const diagram = page.locator("figure.machine");
    await diagram.waitFor();
    expect(await diagram.locator("[data-state]").count()).toBe(Object.keys(providerTurnMachine.root.states).length);
    // The turn with the approvals, the one that completed, and the one the budget stopped.
    for (const turnId of ["turn-1", "turn-3", "turn-7"]) {
      const states = expected.get(turnId);
      expect(states, turnId).toBeDefined();
      await page.locator("[data-control=turn]").selectOption(turnId);
      await page.locator(`figure.machine[data-turn-id="${turnId}"]`).waitFor();
      const highlighted = await diagram.locator('[data-state][data-visited="true"]').evaluateAll((nodes) => nodes.map((node) => node.getAttribute("data-state")));
      expect(highlighted.sort(), turnId).toEqual([...new Set(states)].sort());
      expect(await diagram.locator(".node.current").getAttribute("data-state"), turnId).toBe(states?.at(-1));
      expect(await diagram.locator("[data-field=path]").textContent(), turnId).toBe(states?.join(" → "));
    }
    expect(await diagram.locator('[data-edge="(any state)→stopped"]').getAttribute("data-taken")).toBe("true");
    await diagram.screenshot({ path: path.join(screenshots, "machine-turn-7.png") });
  });

  it("filters the audit table by decision, tool and outcome", async () => {
    const audit = await withReader((reader) => reader.audit(demo.sessionId));
    const page = await openSession();
    const rows = page.locator(".audit-rows tbody tr");
    expect(await rows.count()).toBe(audit.length);
    await page.locator("[data-filter=decision]").selectOption("ask");
    expect(await rows.evaluateAll((list) => list.map((row) => row.getAttribute("data-call-id")))).toEqual(audit.filter((row) => row.decision === "ask").map((row) => row.callId));
    await page.locator("[data-filter=outcome]").selectOption("denied");
    expect(await rows.evaluateAll((list) => list.map((row) => row.getAttribute("data-call-id")))).toEqual(audit.filter((row) => row.decision === "ask" && row.outcome === "denied").map((row) => row.callId));
    await page.locator("[data-filter=decision]").selectOption("");
    await page.locator("[data-filter=outcome]").selectOption("");
    await page.locator("[data-filter=tool]").selectOption("read_file");
    expect(await rows.count()).toBe(audit.filter((row) => row.tool === "read_file").length);
  });

  it("refuses the page and its API without the token", async () => {
    const page = await newPage();
    const response = await page.goto(`${view.origin}/`);
    expect(response?.status()).toBe(403);
    expect(await page.textContent("body")).toMatch(/forbidden/);
    expect(await page.locator("#app").count()).toBe(0);
    for (const asset of ["/app.js", "/api/sessions", `/api/sessions/${demo.sessionId}`, "/api/live"]) {
      const reply = await page.context().request.get(`${view.origin}${asset}`);
      expect(reply.status(), asset).toBe(403);
    }
    const wrong = await page.goto(`${view.origin}/?token=${"x".repeat(43)}`);
    expect(wrong?.status()).toBe(403);
  });

  it("shows new events of a live session, and a new session, without a reload", async () => {
    const page = await openSession();
    const length = Number(await page.locator(".session").getAttribute("data-length"));
    const messages = await page.locator(".timeline .user-message").count();
    await page.evaluate(() => {
      (window as unknown as { notReloaded: boolean }).notReloaded = true;
    });
    // Another process appends to the open session.
    await run(process.execPath, ["--import", "tsx", path.join(repoRoot, "test/cli/support/append-to-session.ts"), logDir(), demo.sessionId, "and one more thing"], { cwd: repoRoot });
    await page.locator(`.session[data-length="${length + 1}"]`).waitFor({ timeout: 60_000 });
    expect(await page.locator(".timeline .user-message").count()).toBe(messages + 1);
    expect(await page.locator("[data-field=session-length]").textContent()).toBe(`${length + 1} events`);
    expect(await page.locator(`.session-nav [data-session-id="${demo.sessionId}"]`).getAttribute("data-events")).toBe(String(length + 1));
    // The slider was at the end: it follows the end.
    await page.locator(`[data-shown-position="${length + 1}"]`).waitFor();
    expect(await page.locator("[data-shown-position] [data-field=event-type]").textContent()).toBe("session.user_message.added");
    // A real session recorded by another process appears in the list.
    const before = await page.locator(".session-nav [data-session-id]").count();
    const second = await demo.turnlog("demo", "--dir", demo.logDir);
    expect(second.code).toBe(0);
    await expect.poll(() => page.locator(".session-nav [data-session-id]").count(), { timeout: 60_000 }).toBe(before + 1);
    expect(await page.evaluate(() => (window as unknown as { notReloaded?: boolean }).notReloaded)).toBe(true);
    expect(await page.locator("[data-live]").getAttribute("data-live")).toBe("live");
    await page.screenshot({ path: path.join(screenshots, "live.png"), fullPage: true });
  });

  it("asks for nothing outside 127.0.0.1, and breaks no rule of its CSP", () => {
    expect(requests.length).toBeGreaterThan(10);
    const elsewhere = requests.filter((url) => {
      const parsed = new URL(url);
      return parsed.protocol !== "http:" || parsed.hostname !== "127.0.0.1";
    });
    expect(elsewhere).toEqual([]);
    expect(requests.some((url) => url.endsWith("/app.js"))).toBe(true);
    expect(requests.some((url) => url.includes("/api/live"))).toBe(true);
    // The refused requests of the token test log a console error each; nothing else may.
    expect(pageErrors.filter((line) => !/status of 403/.test(line))).toEqual([]);
  });
});

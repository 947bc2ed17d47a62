/**
 * Answering held calls in `turnlog view`, in a real headless Chromium: a real host process parks
 * three sessions on a real log (with `autoResume`), the built bin serves the view, and a person's
 * clicks — Deny, Approve, Edit then Approve — are each seen by the host, which finishes the turn;
 * the tool runs once per approval, with the edited arguments for the edit. On PostgreSQL the view
 * appends the answer itself; on LevelDB, where the host holds the log, the host records it.
 *
 * The denied call's arguments are HTML and script: the page shows them as text and runs nothing.
 */
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openLog, type LogReader } from "../../src/reader/index.js";
import { startLogChild, type LogChildProcess } from "../support/log-child-process.js";
import { describeWithPostgres, dropSchema, freshSchemaName, requirePostgresUrl } from "../support/postgres.js";
import { ensureBuiltCli, ensureBuiltView } from "../cli/support/turnlog-bin.js";
import { startView, type ViewProcess } from "../cli/support/view-process.js";
import { describeWithChromium, launchChromium } from "./support/chromium.js";

/** Arguments a model might write to attack the page that shows them. */
const hostileVersion = `<img src=x onerror="window.__pwned='img'"><script>window.__pwned='script'</script>`;

/** The three sessions the host parks: session → the deploy call's arguments. */
const sessions = {
  "view-deny": { version: hostileVersion },
  "view-approve": { version: "v2" },
  "view-edit": { version: "v2" },
} as const;

type Backend = { kind: "leveldb" } | { kind: "postgres"; url: string; schema: string };

function answerSuite(backendOf: () => Backend) {
  let browser: Browser;
  let workDir: string;
  let effects: string;
  let host: LogChildProcess;
  let view: ViewProcess;
  let page: Page;
  const callIds = new Map<string, string>();
  const requests: string[] = [];
  const pageErrors: string[] = [];

  const hostLine = (prefix: string) => host.waitForLine((line) => line.startsWith(prefix)).then(() => host.lines.find((line) => line.startsWith(prefix)) ?? "");
  const ran = async () => (await readFile(effects, "utf8")).split("\n").filter((line) => line !== "");

  /** A reader over the log, once the host is gone (LevelDB) or beside it (PostgreSQL). */
  async function withReader<T>(work: (reader: LogReader) => Promise<T>): Promise<T> {
    const backend = backendOf();
    const reader = await openLog(backend.kind === "postgres" ? { url: backend.url, schema: backend.schema } : { dir: path.join(workDir, "log") });
    try {
      return await work(reader);
    } finally {
      await reader.close();
    }
  }

  /** The session's page, its held call shown. */
  async function openHeld(sessionId: string) {
    await page.evaluate((hash) => {
      location.hash = hash;
    }, `#/session/${sessionId}`);
    const card = page.locator(`.held-call[data-call-id="${callIds.get(sessionId)}"]`);
    await card.waitFor();
    return card;
  }

  beforeAll(async () => {
    const backend = backendOf();
    workDir = await mkdtemp(path.join(os.tmpdir(), `turnlog-view-answers-${backend.kind}-`));
    effects = path.join(workDir, "effects.txt");
    await writeFile(effects, "");
    const location = backend.kind === "postgres" ? `${backend.url}#${backend.schema}` : path.join(workDir, "log");
    const [launched] = await Promise.all([launchChromium(), ensureBuiltCli(), ensureBuiltView()]);
    browser = launched;
    host = startLogChild("view-host-child.ts", [location, effects, workDir, ...Object.entries(sessions).map(([id, args]) => `${id}=${JSON.stringify(args)}`)]);
    for (const sessionId of Object.keys(sessions)) {
      const line = await hostLine(`parked ${sessionId} `);
      callIds.set(sessionId, line.split(" ")[2] ?? "");
    }
    const logArguments = backend.kind === "postgres" ? ["--log", backend.url, "--schema", backend.schema] : ["--dir", "log", "--interval", "50"];
    view = await startView(logArguments, { cwd: workDir });
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
    context.on("request", (request) => requests.push(request.url()));
    page = await context.newPage();
    page.on("console", (message) => {
      if (message.type() === "error") pageErrors.push(message.text());
    });
    page.on("pageerror", (error) => pageErrors.push(error.message));
    await page.goto(`${view.url}#/session/view-deny`);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    if (view !== undefined) expect(await view.stop()).toBe(0);
    if (host !== undefined && host.child.exitCode === null) host.child.kill("SIGKILL");
    if (workDir !== undefined) await rm(workDir, { recursive: true, force: true });
  });

  it("shows HTML and script in a held call's arguments as text, and runs none of it", async () => {
    const card = await openHeld("view-deny");
    expect(await card.locator("[data-field=arguments]").textContent()).toContain(hostileVersion.replace(/"/g, '\\"'));
    await page.locator("[data-field=verdict]").waitFor();
    expect(await page.evaluate(() => (window as unknown as { __pwned?: string }).__pwned)).toBeUndefined();
    expect(await page.evaluate(() => document.querySelectorAll("img").length)).toBe(0);
    expect(await page.evaluate(() => Array.from(document.scripts, (script) => new URL(script.src, location.href).pathname))).toEqual(["/app.js"]);
    // The page's own header says where scripts may come from.
    const response = await page.request.get(`${view.origin}/`);
    expect(response.headers()["content-security-policy"]).toContain("script-src 'self'");
  });

  it("Deny: the host hears of it and tells the model the call did not run", async () => {
    const card = await openHeld("view-deny");
    // The name the page asks for: the OS user the view runs as, until the person names someone.
    const by = page.locator("[data-control=by]");
    expect(await by.inputValue()).toBe(os.userInfo().username);
    await by.fill("ana (reviewer)");
    await card.locator("[data-control=note]").fill("not this one");
    await card.locator("[data-action=deny]").click();
    await page.locator(`[data-answered-call-id="${callIds.get("view-deny")}"][data-ok="true"]`).waitFor();
    expect(await hostLine("final view-deny ")).toBe("final view-deny completed Done.");
    // The page follows the log: the call leaves the held list, the audit shows who denied it.
    await page.locator('[data-field=held][data-count="0"]').waitFor();
    await page.locator(`.audit-rows tr[data-call-id="${callIds.get("view-deny")}"][data-outcome="denied"]`).waitFor();
    expect(await ran()).toEqual([]);
  });

  it("Approve: the host runs the tool once and finishes the turn", async () => {
    const card = await openHeld("view-approve");
    // Asked once, kept: the name typed for the last answer.
    expect(await page.locator("[data-control=by]").inputValue()).toBe("ana (reviewer)");
    await card.locator("[data-action=approve]").click();
    expect(await hostLine("final view-approve ")).toBe("final view-approve completed Done.");
    await page.locator(`.audit-rows tr[data-call-id="${callIds.get("view-approve")}"][data-outcome="succeeded"]`).waitFor();
    expect(await ran()).toEqual([`view-approve ${callIds.get("view-approve")} {"version":"v2"}`]);
  });

  it("Edit: the page checks the JSON, the decider refuses arguments the tool does not take, the host runs the tool with the edited arguments, and the audit shows both", async () => {
    const card = await openHeld("view-edit");
    await card.locator("[data-action=edit]").click();
    const editor = card.locator("[data-control=arguments]");
    const approve = card.locator("[data-action=approve-edited]");
    await editor.fill('{"version": ');
    expect(await card.locator("[data-field=arguments-error]").textContent()).toMatch(/^not JSON/);
    expect(await approve.isDisabled()).toBe(true);
    await editor.fill('["v3"]');
    expect(await card.locator("[data-field=arguments-error]").textContent()).toMatch(/JSON object/);
    expect(await approve.isDisabled()).toBe(true);
    // JSON the page takes, but the tool's schema does not: the decider refuses it, the page says why, the call stays held.
    await editor.fill('{ "version": 3 }');
    await approve.click();
    expect(await card.locator("[data-field=answer-error]").textContent()).toMatch(/^409: .*cannot be approved with these arguments/);
    expect(host.lines.some((line) => line.startsWith("final view-edit "))).toBe(false);
    await editor.fill('{ "version": "v3" }');
    expect(await card.locator("[data-field=arguments-error]").count()).toBe(0);
    await approve.click();
    expect(await hostLine("final view-edit ")).toBe("final view-edit completed Done.");
    await page.locator(`.audit-rows tr[data-call-id="${callIds.get("view-edit")}"][data-outcome="succeeded"]`).waitFor();
    const edited = await page.locator(`.audit-rows tr[data-call-id="${callIds.get("view-edit")}"] [data-edited]`).textContent();
    expect(edited).toContain('proposed {"version":"v2"}');
    expect(edited).toContain('ran {"version":"v3"}');
    expect((await ran()).at(-1)).toBe(`view-edit ${callIds.get("view-edit")} {"version":"v3"}`);
    expect(await host.exited).toMatchObject({ code: 0 });
    // Once each: two approvals, two runs.
    expect(await ran()).toHaveLength(2);
    await withReader(async (reader) => {
      expect(await reader.audit("view-edit")).toMatchObject([{ callId: callIds.get("view-edit"), approval: { granted: true, by: "ana (reviewer)" }, edited: { proposed: { version: "v2" }, ran: { version: "v3" } } }]);
      expect(await reader.audit("view-deny")).toMatchObject([{ approval: { granted: false, by: "ana (reviewer)", note: "not this one" } }]);
    });
  });

  it("asks for nothing outside 127.0.0.1, and breaks no rule of its CSP", () => {
    expect(requests.filter((url) => new URL(url).hostname !== "127.0.0.1")).toEqual([]);
    // Deny, Approve, the refused edit and the edit.
    expect(requests.filter((url) => url.includes("/calls/"))).toHaveLength(4);
    // The refused edit's 409 is logged by the browser as a failed request; nothing else may be (a CSP violation is an error).
    expect(pageErrors.filter((line) => !/status of 409/.test(line))).toEqual([]);
  });
}

describeWithChromium("answering held calls in turnlog view, in a real Chromium", () => {
  describe("on a LevelDB log the host holds: the host records the answer", () => {
    answerSuite(() => ({ kind: "leveldb" }));
  });

  describeWithPostgres("on PostgreSQL: the view appends the answer, the host hears of it", () => {
    let schema: string;
    beforeAll(() => {
      schema = freshSchemaName("view_answers");
    });
    afterAll(async () => {
      if (schema !== undefined) await dropSchema(schema);
    });
    answerSuite(() => ({ kind: "postgres", url: requirePostgresUrl(), schema }));
  });
});

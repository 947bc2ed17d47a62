/**
 * `turnlog view`'s answers to held calls, attacked over real HTTP: the built bin as a child
 * process on a real LevelDB log whose sessions a real host parked (and then died, so no process
 * holds the log). Every request short of the cookie, the CSRF token, the view's own Origin and
 * Host and a JSON body is refused, and the log shows nothing appended; the view's own page's
 * request records the answer.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AccessResponse, AnswerResponse, SessionTimeline } from "../../src/cli/view/view-api.js";
import { openLog } from "../../src/reader/index.js";
import { startLogChild } from "../support/log-child-process.js";
import { ensureBuiltCli, ensureBuiltView } from "./support/turnlog-bin.js";
import { runTurnlogInProcess } from "./support/turnlog-in-process.js";
import { send, startView, type ViewProcess } from "./support/view-process.js";

describe("turnlog view answers held calls, and only from its own page", () => {
  let workDir: string;
  let logDir: string;
  let view: ViewProcess;
  let cookie: string;
  let origin: string;
  let csrf: string;
  /** Session → the held call's ID, as the host printed it. */
  const held = new Map<string, string>();

  /** The session's event types, read from the log (no process holds it). */
  async function eventTypes(sessionId: string): Promise<string[]> {
    const reader = await openLog({ dir: logDir });
    try {
      return (await reader.events(sessionId)).map((event) => event.type);
    } finally {
      await reader.close();
    }
  }

  const answerPath = (sessionId: string, decision: "approve" | "deny" = "approve") => `/api/sessions/${sessionId}/calls/${held.get(sessionId) ?? ""}/${decision}`;
  /** What the view's own page sends: every header right. */
  const pageHeaders = () => ({ Host: `127.0.0.1:${view.port}`, Origin: origin, Cookie: cookie, "Content-Type": "application/json", "X-Turnlog-CSRF": csrf });

  beforeAll(async () => {
    workDir = await mkdtemp(path.join(os.tmpdir(), "turnlog-view-answers-"));
    logDir = path.join(workDir, "log");
    const effects = path.join(workDir, "effects.txt");
    await writeFile(effects, "");
    // A host parks two sessions, then dies: the log is left with two held calls and no owner.
    const host = startLogChild("view-host-child.ts", [logDir, effects, workDir, 'held-1={"version":"v2"}', 'held-2={"version":"v3"}']);
    await host.waitForLine((line) => line.startsWith("parked held-2 "));
    for (const line of host.lines.filter((candidate) => candidate.startsWith("parked "))) {
      const [, sessionId, callId] = line.split(" ");
      held.set(sessionId as string, callId as string);
    }
    host.child.kill("SIGKILL");
    await host.exited;
    await Promise.all([ensureBuiltCli(), ensureBuiltView()]);
    view = await startView(["--dir", "log", "--interval", "50"], { cwd: workDir });
    cookie = `turnlog_view_${view.port}=${view.token}`;
    origin = `http://127.0.0.1:${view.port}`;
    const access = await send(view.port, "/api/access", { headers: { Cookie: cookie } });
    expect(access.status).toBe(200);
    csrf = (JSON.parse(access.body) as AccessResponse).csrfToken;
  }, 120_000);

  afterAll(async () => {
    if (view !== undefined) expect(await view.stop()).toBe(0);
    if (workDir !== undefined) await rm(workDir, { recursive: true, force: true });
  });

  it("shows each held call with its arguments and fingerprint, and gives the CSRF token only with the cookie", async () => {
    const timeline = JSON.parse((await send(view.port, "/api/sessions/held-1", { headers: { Cookie: cookie } })).body) as SessionTimeline;
    expect(timeline.held).toEqual([expect.objectContaining({ callId: held.get("held-1"), tool: "deploy", input: { version: "v2" }, fingerprint: expect.any(String), argumentsRedacted: false })]);
    expect(csrf).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(csrf).not.toBe(view.token);
    const anonymous = await send(view.port, "/api/access");
    expect(anonymous.status).toBe(403);
    expect(anonymous.body).not.toContain(csrf);
    // Another origin's page may send the request (with no cookie: SameSite=Strict), never read it: no CORS header.
    const foreign = await send(view.port, "/api/access", { headers: { Cookie: cookie, Origin: "http://evil.example" } });
    expect(Object.keys(foreign.headers).filter((name) => name.startsWith("access-control-"))).toEqual([]);
  });

  it("refuses an answer without the cookie, without the CSRF token, from a foreign Origin or Host, or not as JSON — and appends nothing", async () => {
    const before = await eventTypes("held-1");
    expect(before.filter((type) => type.startsWith("turn.approval."))).toEqual([]);
    const body = JSON.stringify({ by: "mallory" });
    const attacks: [string, Record<string, string | undefined>, number][] = [
      ["no cookie", { Cookie: undefined }, 403],
      ["another view's cookie", { Cookie: `turnlog_view_1=${view.token}` }, 403],
      ["a wrong cookie", { Cookie: `turnlog_view_${view.port}=${"A".repeat(43)}` }, 403],
      ["no CSRF token", { "X-Turnlog-CSRF": undefined }, 403],
      ["a wrong CSRF token", { "X-Turnlog-CSRF": "A".repeat(43) }, 403],
      ["the cookie's token as the CSRF token", { "X-Turnlog-CSRF": view.token }, 403],
      ["no Origin", { Origin: undefined }, 403],
      ["a foreign Origin", { Origin: "http://evil.example" }, 403],
      ["another port's Origin", { Origin: `http://127.0.0.1:${view.port + 1}` }, 403],
      ["an https Origin", { Origin: `https://127.0.0.1:${view.port}` }, 403],
      ["the null Origin", { Origin: "null" }, 403],
      ["localhost's Origin on a request to 127.0.0.1", { Origin: `http://localhost:${view.port}` }, 403],
      ["a rebound DNS name as Host and Origin", { Host: `evil.example:${view.port}`, Origin: `http://evil.example:${view.port}` }, 403],
      ["a foreign Host", { Host: "evil.example" }, 403],
      ["a form's body", { "Content-Type": "application/x-www-form-urlencoded" }, 415],
      ["text/plain (a simple cross-origin request)", { "Content-Type": "text/plain" }, 415],
    ];
    for (const [name, changes, status] of attacks) {
      const headers: Record<string, string> = {};
      for (const [key, value] of Object.entries({ ...pageHeaders(), ...changes })) if (value !== undefined) headers[key] = value;
      const reply = await send(view.port, answerPath("held-1"), { method: "POST", headers, body });
      expect(reply.status, name).toBe(status);
    }
    // The token in the URL opens pages, never a change.
    const { Cookie: _cookie, ...withoutCookie } = pageHeaders();
    expect((await send(view.port, `${answerPath("held-1")}?token=${view.token}`, { method: "POST", headers: withoutCookie, body })).status).toBe(403);
    // A cross-origin page's preflight is never granted: no CORS header, and only POST is allowed.
    const preflight = await send(view.port, answerPath("held-1"), { method: "OPTIONS", headers: { Origin: "http://evil.example", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "x-turnlog-csrf, content-type" } });
    expect(preflight.status).toBe(405);
    expect(preflight.headers.allow).toBe("POST");
    expect(Object.keys(preflight.headers).filter((name) => name.startsWith("access-control-"))).toEqual([]);
    // GET never changes anything: the answer route is no page.
    expect((await send(view.port, answerPath("held-1"), { headers: { Cookie: cookie } })).status).toBe(404);
    // Well-formed requests with a bad answer: refused before the log is touched.
    for (const [name, bad] of [
      ["no by", "{}"],
      ["an empty by", JSON.stringify({ by: "  " })],
      ["a by with a terminal escape", JSON.stringify({ by: "ana\u001b[2J" })],
      ["an unknown field", JSON.stringify({ by: "ana", argumets: { version: "v9" } })],
      ["arguments that are no object", JSON.stringify({ by: "ana", arguments: ["v9"] })],
      ["not JSON", "{by:"],
    ] as const) {
      const reply = await send(view.port, answerPath("held-1"), { method: "POST", headers: pageHeaders(), body: bad });
      expect(reply.status, name).toBe(400);
    }
    const denyWithArguments = await send(view.port, answerPath("held-1", "deny"), { method: "POST", headers: pageHeaders(), body: JSON.stringify({ by: "ana", arguments: { version: "v9" } }) });
    expect(denyWithArguments.status).toBe(400);
    expect(await eventTypes("held-1")).toEqual(before);
  });

  it("records the page's answer as the person named, once; the call is then no longer held", async () => {
    const reply = await send(view.port, answerPath("held-1"), { method: "POST", headers: pageHeaders(), body: JSON.stringify({ by: "ana", note: "ship it" }) });
    expect(reply.status, reply.body).toBe(200);
    expect(JSON.parse(reply.body) as AnswerResponse).toMatchObject({ sessionId: "held-1", callId: held.get("held-1"), granted: true, by: "ana" });
    const reader = await openLog({ dir: logDir });
    try {
      expect(await reader.audit("held-1")).toMatchObject([{ callId: held.get("held-1"), approval: { granted: true, by: "ana", note: "ship it" } }]);
    } finally {
      await reader.close();
    }
    // A second answer to the same call: the log refuses it (409), and nothing more is appended.
    const types = await eventTypes("held-1");
    const again = await send(view.port, answerPath("held-1", "deny"), { method: "POST", headers: pageHeaders(), body: JSON.stringify({ by: "ana" }) });
    expect(again.status).toBe(409);
    expect(await eventTypes("held-1")).toEqual(types);
    // Sealed as `turnlog approve` seals what it appends: the log verifies.
    const verify = await runTurnlogInProcess(["verify", "--dir", "log"], { cwd: workDir });
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
    expect(verify.stdout).toMatch(/\d+ seals? verified/);
    // The host that parked it did not seal; the view's answer sealed the session (held-2, unanswered, is not).
    expect(verify.stdout).not.toContain("session-held-1");
  });

  it("takes localhost as well as 127.0.0.1, each with its own origin, and refuses a fingerprint that is not the held call's", async () => {
    const localhost = { ...pageHeaders(), Host: `localhost:${view.port}`, Origin: `http://localhost:${view.port}` };
    const before = await eventTypes("held-2");
    const stale = await send(view.port, answerPath("held-2", "deny"), { method: "POST", headers: localhost, body: JSON.stringify({ by: "ben", fingerprint: "0".repeat(64) }) });
    expect(stale.status).toBe(409);
    expect(await eventTypes("held-2")).toEqual(before);
    const timeline = JSON.parse((await send(view.port, "/api/sessions/held-2", { headers: { Cookie: cookie } })).body) as SessionTimeline;
    const denied = await send(view.port, answerPath("held-2", "deny"), { method: "POST", headers: localhost, body: JSON.stringify({ by: "ben", fingerprint: timeline.held[0]?.fingerprint }) });
    expect(denied.status, denied.body).toBe(200);
    expect((await eventTypes("held-2")).at(-1)).toBe("turn.approval.denied");
  });
});

/**
 * `turnlog view`'s server, by effect: the built bin as a child process on a real LevelDB log (and
 * on the PostgreSQL test server), spoken to over real HTTP on 127.0.0.1 and stopped by a signal.
 * The commands that return (a refused `view`, the demo that fills the log) run in-process.
 */
import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sessionStream } from "../../src/core/session-stream.js";
import { PostgresEventLog } from "../../src/log/postgres/postgres-event-log.js";
import { openLog } from "../../src/reader/index.js";
import type { PositionState, SessionTimeline } from "../../src/cli/view/view-api.js";
import type { SessionListing } from "../../src/reader/index.js";
import { describeWithPostgres, dropSchema, freshSchemaName, requirePostgresUrl } from "../support/postgres.js";
import { expectOneCleanLine, useDemoSession } from "./support/demo-fixture.js";
import { ensureBuiltView, repoRoot } from "./support/turnlog-bin.js";
import { runTurnlogInProcess } from "./support/turnlog-in-process.js";
import { openEventStream, send, startView, type ViewProcess } from "./support/view-process.js";

const run = promisify(execFile);

/** Every file of a directory with the SHA-256 of its bytes. */
async function fingerprint(directory: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const entry of await readdir(directory, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    files[path.relative(directory, file)] = createHash("sha256").update(await readFile(file)).digest("hex");
  }
  return files;
}

const appendToSession = (logDir: string, sessionId: string, ...texts: string[]) =>
  run(process.execPath, ["--import", "tsx", path.join(repoRoot, "test/cli/support/append-to-session.ts"), logDir, sessionId, ...texts], { cwd: repoRoot });

describe("turnlog view on a LevelDB log", () => {
  const demo = useDemoSession("view-server");
  let view: ViewProcess;
  let cookie: string;
  let before: Record<string, string>;
  const logDir = () => path.join(demo.workDir, demo.logDir);
  const get = (rawPath: string, headers: Record<string, string> = {}) => send(view.port, rawPath, { headers: { Cookie: cookie, ...headers } });

  beforeAll(async () => {
    await ensureBuiltView();
    before = await fingerprint(logDir());
    view = await startView(["--dir", demo.logDir, "--interval", "50"], { cwd: demo.workDir });
    cookie = `turnlog_view_${view.port}=${view.token}`;
  }, 120_000);

  afterAll(async () => {
    await view?.stop();
  });

  it("prints a URL on 127.0.0.1 that carries a one-time 256-bit token", async () => {
    expect(view.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(view.token, "base64url")).toHaveLength(32);
    // A second server gets another token.
    const other = await startView(["--dir", demo.logDir], { cwd: demo.workDir });
    try {
      expect(other.token).not.toBe(view.token);
      expect(other.port).not.toBe(view.port);
    } finally {
      expect(await other.stop()).toBe(0);
    }
  });

  it("refuses the page, its files, the API and the live events without the token, and with a wrong one", async () => {
    const paths = ["/", "/index.html", "/app.js", "/app.css", "/api/access", "/api/sessions", "/api/machine", `/api/sessions/${demo.sessionId}`, `/api/sessions/${demo.sessionId}/state?at=1`, `/api/sessions/${demo.sessionId}/replay`, "/api/live"];
    const wrongToken = "A".repeat(43);
    for (const rawPath of paths) {
      const anonymous = await send(view.port, rawPath);
      expect(anonymous.status, rawPath).toBe(403);
      expect(anonymous.body).not.toContain(demo.sessionId);
      expect((await send(view.port, rawPath, { headers: { Cookie: `turnlog_view_${view.port}=${wrongToken}` } })).status, rawPath).toBe(403);
      const separator = rawPath.includes("?") ? "&" : "?";
      expect((await send(view.port, `${rawPath}${separator}token=${wrongToken}`)).status, rawPath).toBe(403);
      // A cookie of another view (another port) is not this one's.
      expect((await send(view.port, rawPath, { headers: { Cookie: `turnlog_view_1=${view.token}` } })).status, rawPath).toBe(403);
    }
  });

  it("takes the token once from the URL: an HttpOnly, SameSite=Strict cookie, and a redirect to the URL without it", async () => {
    const first = await send(view.port, `/?token=${view.token}`);
    expect(first.status).toBe(303);
    expect(first.headers.location).toBe("/");
    const setCookie = String(first.headers["set-cookie"]);
    expect(setCookie).toContain(`turnlog_view_${view.port}=${view.token}`);
    expect(setCookie).toMatch(/HttpOnly/);
    expect(setCookie).toMatch(/SameSite=Strict/);
    const page = await get("/");
    expect(page.status).toBe(200);
    expect(page.headers["content-type"]).toMatch(/^text\/html/);
    expect(page.body).toContain('<script type="module" src="/app.js"></script>');
    expect((await get("/app.js")).headers["content-type"]).toMatch(/^text\/javascript/);
    const sessions = JSON.parse((await get("/api/sessions")).body) as SessionListing[];
    expect(sessions.map((session) => session.id)).toContain(demo.sessionId);
    // The token in the URL also opens an API route, without a redirect.
    expect((await send(view.port, `/api/sessions?token=${view.token}`)).status).toBe(200);
  });

  it("refuses a Host header other than 127.0.0.1 or localhost on its port (DNS rebinding)", async () => {
    for (const host of ["evil.example", `evil.example:${view.port}`, "127.0.0.1", `127.0.0.1:${view.port + 1}`, `localhost.evil.example:${view.port}`, `[::1]:${view.port}`]) {
      const reply = await get("/api/sessions", { Host: host });
      expect(reply.status, host).toBe(403);
      expect(reply.body).not.toContain(demo.sessionId);
    }
    expect((await get("/api/sessions", { Host: `localhost:${view.port}` })).status).toBe(200);
    expect((await get("/api/sessions", { Host: `127.0.0.1:${view.port}` })).status).toBe(200);
  });

  it("answers only GET and HEAD: anything else is 405", async () => {
    for (const method of ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"]) {
      const reply = await send(view.port, "/api/sessions", { method, headers: { Cookie: cookie } });
      expect(reply.status, method).toBe(405);
      expect(reply.headers.allow).toBe("GET, HEAD");
    }
    const head = await send(view.port, "/", { method: "HEAD", headers: { Cookie: cookie } });
    expect(head.status).toBe(200);
    expect(head.body).toBe("");
  });

  it("sends a CSP of its own origin only, nosniff and no-referrer, and no CORS header", async () => {
    for (const rawPath of ["/", "/app.js", "/api/sessions", "/nothing-here"]) {
      const reply = await get(rawPath, { Origin: "http://evil.example" });
      expect(reply.headers["content-security-policy"], rawPath).toMatch(/^default-src 'self'(;|$)/);
      expect(reply.headers["content-security-policy"]).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
      expect(reply.headers["x-content-type-options"]).toBe("nosniff");
      expect(reply.headers["referrer-policy"]).toBe("no-referrer");
      expect(Object.keys(reply.headers).filter((name) => name.startsWith("access-control-"))).toEqual([]);
    }
    // The page has no inline script for the CSP to allow.
    expect((await get("/")).body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
  });

  it("serves only its bundled files: no path reaches the file system", async () => {
    for (const rawPath of ["/../package.json", "/..%2f..%2fpackage.json", "/%2e%2e/%2e%2e/package.json", "/app.js/../../package.json", "/package.json", "/dist/cli.js", "/view/app.js", "/src/cli/main.ts", "//etc/passwd", "/..\\..\\package.json", "/%2e%2e%5c%2e%2e%5cpackage.json"]) {
      const reply = await get(rawPath);
      expect(reply.status, rawPath).toBe(404);
      expect(reply.body).not.toContain('"name": "turnlog"');
      expect(reply.body).not.toContain("root:");
      expect(JSON.parse(reply.body)).toEqual({ error: expect.stringMatching(/^no such path/) });
    }
  });

  it("reads the log without changing a byte of it", async () => {
    const timeline = JSON.parse((await get(`/api/sessions/${demo.sessionId}`)).body) as SessionTimeline;
    for (const rawPath of ["/api/sessions", "/api/machine", `/api/sessions/${demo.sessionId}/state?at=1`, `/api/sessions/${demo.sessionId}/state?at=${timeline.length}`, `/api/sessions/${demo.sessionId}/replay`]) {
      expect((await get(rawPath)).status, rawPath).toBe(200);
    }
    const live = await openEventStream(`${view.origin}/api/live?session=${demo.sessionId}&after=${timeline.length}`, { Cookie: cookie });
    await live.waitFor((event) => event.event === "sessions");
    live.close();
    expect(await fingerprint(logDir())).toEqual(before);
    const verify = await demo.turnlog("verify", "--dir", demo.logDir);
    expect(verify.code).toBe(0);
  });

  it("shows the state at a position as LogReader.view gives it", async () => {
    const reader = await openLog({ dir: logDir() });
    try {
      const length = (await reader.events(demo.sessionId)).length;
      for (const at of [1, 11, 12, 30, length]) {
        const expected = await reader.view(demo.sessionId, { at });
        const shown = JSON.parse((await get(`/api/sessions/${demo.sessionId}/state?at=${at}`)).body) as PositionState;
        expect(shown.position).toBe(at);
        expect(shown.status).toBe(expected.status);
        expect(shown.machineState).toBe(expected.machineState);
        expect(shown.messages).toBe(expected.state.messages.length);
        expect(shown.pendingApprovals.map((call) => call.callId)).toEqual(expected.pendingApprovals.map((call) => call.callId));
        expect(shown.calls.map((call) => [call.callId, call.status])).toEqual([...expected.state.calls.values()].map((call) => [call.callId, call.status]));
      }
      expect((await get(`/api/sessions/${demo.sessionId}/state?at=${length + 1}`)).status).toBe(400);
      expect((await get(`/api/sessions/no-such-session`)).status).toBe(404);
    } finally {
      await reader.close();
    }
  });

  it("never keeps a writer from the log, and tells the page of what the writer appends", async () => {
    const timeline = JSON.parse((await get(`/api/sessions/${demo.sessionId}`)).body) as SessionTimeline;
    const live = await openEventStream(`${view.origin}/api/live?session=${demo.sessionId}&after=${timeline.length}`, { Cookie: cookie });
    try {
      expect(live.status).toBe(200);
      await live.waitFor((event) => event.event === "sessions");
      // Another process opens the log (taking its lock) and appends while the view serves it.
      await appendToSession(logDir(), demo.sessionId, "one more question");
      const grown = await live.waitFor((event) => event.event === "session");
      expect(JSON.parse(grown.data)).toEqual({ sessionId: demo.sessionId, length: timeline.length + 1 });
      await live.waitFor((event) => event.event === "sessions" && (JSON.parse(event.data) as { sessions: SessionListing[] }).sessions.some((session) => session.id === demo.sessionId && session.events === timeline.length + 1));
      const after = JSON.parse((await get(`/api/sessions/${demo.sessionId}`)).body) as SessionTimeline;
      expect(after.length).toBe(timeline.length + 1);
      expect(after.userMessages.at(-1)?.text).toBe("one more question");
    } finally {
      live.close();
    }
  });

  it("opens a session named on the command line; an unknown session, a bad port or a port in use is one clean line", async () => {
    const named = await startView([demo.sessionId, "--dir", demo.logDir], { cwd: demo.workDir });
    try {
      expect(named.url).toMatch(new RegExp(`/\\?token=[A-Za-z0-9_-]+#/session/${demo.sessionId}$`));
    } finally {
      expect(await named.stop()).toBe(0);
    }
    const unknown = await runTurnlogInProcess(["view", "no-such-session", "--dir", demo.logDir], { cwd: demo.workDir });
    expect(unknown.code).toBe(1);
    expectOneCleanLine(unknown.stderr);
    expect(unknown.stderr).toContain('no session "no-such-session"');
    const badPort = await runTurnlogInProcess(["view", "--port", "http", "--dir", demo.logDir], { cwd: demo.workDir });
    expect(badPort.code).toBe(2);
    expectOneCleanLine(badPort.stderr);
    const taken = await runTurnlogInProcess(["view", "--port", String(view.port), "--dir", demo.logDir], { cwd: demo.workDir });
    expect(taken.code).toBe(1);
    expectOneCleanLine(taken.stderr);
    expect(taken.stderr).toContain(`port ${view.port}`);
    const missing = await runTurnlogInProcess(["view", "--dir", "no-log-here"], { cwd: demo.workDir });
    expect(missing.code).toBe(1);
    expectOneCleanLine(missing.stderr);
  });

  it("stops on SIGINT with exit 0", async () => {
    const stopped = await startView(["--dir", demo.logDir], { cwd: demo.workDir });
    const live = await openEventStream(`${stopped.origin}/api/live`, { Cookie: `turnlog_view_${stopped.port}=${stopped.token}` });
    await live.waitFor((event) => event.event === "sessions");
    // An open live connection does not keep it from stopping.
    expect(await stopped.stop()).toBe(0);
    live.close();
  });
});

describeWithPostgres("turnlog view on a PostgreSQL log", () => {
  let schema: string;
  beforeAll(async () => {
    schema = freshSchemaName("view");
    await ensureBuiltView();
  }, 120_000);
  afterAll(async () => {
    if (schema !== undefined) await dropSchema(schema);
  });

  it("reads the schema directly and follows a session as a host appends to it", async () => {
    const url = requirePostgresUrl();
    const { mkdtemp, rm } = await import("node:fs/promises");
    const os = await import("node:os");
    const workDir = await mkdtemp(path.join(os.tmpdir(), "turnlog-view-pg-"));
    try {
      const demo = await runTurnlogInProcess(["demo", "--log", url, "--schema", schema], { cwd: workDir });
      expect(demo.code).toBe(0);
      const sessionId = /session\s+(demo-\S+)/.exec(demo.stdout)?.[1] ?? "";
      const view = await startView([sessionId, "--log", url, "--schema", schema], { cwd: workDir });
      const cookie = `turnlog_view_${view.port}=${view.token}`;
      try {
        expect(view.url).toContain(`#/session/${sessionId}`);
        expect(view.stdout).not.toMatch(/:[^@/]*@/);
        const timeline = JSON.parse((await send(view.port, `/api/sessions/${sessionId}`, { headers: { Cookie: cookie } })).body) as SessionTimeline;
        expect(timeline.turns.flatMap((turn) => turn.calls).length).toBe(timeline.audit.length);
        expect((await send(view.port, `/api/sessions/${sessionId}`)).status).toBe(403);
        const live = await openEventStream(`${view.origin}/api/live?session=${sessionId}&after=${timeline.length}`, { Cookie: cookie });
        try {
          await live.waitFor((event) => event.event === "sessions");
          const log = await PostgresEventLog.open(url, { schema });
          try {
            await log.appendToStream(sessionStream(sessionId), [{ type: "session.user_message.added", data: { content: "from a host" } }]);
          } finally {
            await log.close();
          }
          const grown = await live.waitFor((event) => event.event === "session");
          expect(JSON.parse(grown.data)).toEqual({ sessionId, length: timeline.length + 1 });
          await live.waitFor((event) => event.event === "sessions" && (JSON.parse(event.data) as { sessions: SessionListing[] }).sessions.some((session) => session.id === sessionId && session.events === timeline.length + 1));
        } finally {
          live.close();
        }
      } finally {
        expect(await view.stop()).toBe(0);
      }
    } finally {
      await rm(workDir, { recursive: true, force: true });
    }
  });
});

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { userInfo } from "node:os";
import { PositionOutOfRangeError, isValidSessionId, turnMachineGraph, type SessionListing } from "../../reader/index.js";
import { OwnerChannelError } from "../../errors/owner-channel-error.js";
import { SessionStateError } from "../../errors/session-state-error.js";
import { UnknownSessionError } from "../../errors/unknown-session-error.js";
import { allowedHost, allowedOrigin, cookieValue, csrfHeader, securityHeaders, viewCookie, viewCookieName } from "./view-access.js";
import { newSecretToken, tokensMatch } from "../../util/secret-token.js";
import { answerFromBody, type ViewAnswers } from "./view-answers.js";
import type { ViewAssets } from "./view-assets.js";
import { positionState, sessionTimeline } from "./session-timeline.js";
import type { AccessResponse, AnswerResponse, ApiError, LiveSessionMessage, LiveSessionsMessage } from "./view-api.js";
import type { ViewSource } from "./view-source.js";
import { describeThrown } from "../../util/json-value.js";

/** Options of {@link startViewServer}. */
export interface ViewServerOptions {
  source: ViewSource;
  assets: ViewAssets;
  /** The port on 127.0.0.1; 0 (default): one the system picks. */
  port?: number;
  /** How often an idle server-sent-events connection gets a comment, so proxies and browsers keep it. Default 15 s. */
  keepAliveMs?: number;
  /** How answers to held calls are recorded; absent: the view is read-only and answers every POST with 405. */
  answers?: ViewAnswers;
  /** Whom the page records an answer as until the person names someone. Default: the operating-system user. */
  defaultBy?: string;
}

/** A running view server. */
export interface ViewServer {
  readonly port: number;
  /** This start's token: the URL carries it once, then a cookie does. */
  readonly token: string;
  /** `http://127.0.0.1:<port>/?token=<token>`. */
  readonly url: string;
  /** Stops listening, ends every open connection (server-sent events included) and waits for them. */
  close(): Promise<void>;
}

/** What an API route answers: a status and a JSON body. */
interface ApiAnswer {
  status: number;
  body: unknown;
}

const ok = (body: unknown): ApiAnswer => ({ status: 200, body });
const refused = (status: number, error: string): ApiAnswer => ({ status, body: { error } satisfies ApiError });

/** The answer routes: `POST /api/sessions/<id>/calls/<callId>/approve` and `…/deny`. */
const answerRoute = /^\/api\/sessions\/([^/]+)\/calls\/([^/]+)\/(approve|deny)$/;

/** The largest answer body read: edited arguments of a tool call, with room to spare. */
const maxAnswerBytes = 1024 * 1024;

/**
 * Serves `turnlog view`'s page and its JSON API on 127.0.0.1. Every request must carry the token:
 * `?token=` once (the first `GET /?token=…` sets an HttpOnly, SameSite=Strict cookie and redirects
 * to the URL without it), then the cookie. A request with neither, or with a Host header other
 * than `127.0.0.1:<port>` / `localhost:<port>`, gets 403. Only the bundled files and the API
 * routes exist: no request path reaches the file system. GET and HEAD never change anything.
 *
 * With `answers`, the page may answer held calls: `POST /api/sessions/<id>/calls/<callId>/approve`
 * (or `/deny`) with a JSON body (`AnswerRequest` in view-api.ts). Such a request is taken only with the
 * cookie (never the token in the URL), an `Origin` that is exactly the view's own, the server's
 * CSRF token in the `X-Turnlog-CSRF` header (`GET /api/access` gives it to the page) and a JSON
 * body; anything short of that is refused before the body is read, and nothing is appended.
 *
 * Routes: `/` (the page), `/app.js`, `/app.css`, `/api/access`, `/api/sessions`, `/api/machine`,
 * `/api/sessions/<id>`, `/api/sessions/<id>/state?at=N`, `/api/sessions/<id>/replay`, and
 * `/api/live[?session=<id>&after=N]` (server-sent events: `sessions` with the list whenever the
 * log changed, `session` with a followed session's new length).
 *
 * @example
 * const server = await startViewServer({ source, assets: await loadViewAssets(), answers });
 * console.log(server.url);
 */
export async function startViewServer(options: ViewServerOptions): Promise<ViewServer> {
  const token = newSecretToken();
  // A second secret of the same strength: the page reads it from /api/access and sends it back in a header.
  const csrfToken = newSecretToken();
  const { source, assets, answers } = options;
  const defaultBy = options.defaultBy ?? operatingSystemUser();
  const keepAliveMs = options.keepAliveMs ?? 15_000;
  const live = new Set<LiveClient>();
  let port = 0;
  /** What a path answers to: an answer route takes POST only (when this view answers), every other path GET and HEAD. */
  const allowedMethods = (pathname: string) => (answers !== undefined && answerRoute.test(pathname) ? "POST" : "GET, HEAD");

  // One listing per change, sent to every open page.
  const stopWatching = source.onChange(() => {
    if (live.size === 0) return;
    void source
      .read((reader) => reader.sessions())
      .then((sessions) => {
        for (const client of live) client.send("sessions", { sessions } satisfies LiveSessionsMessage);
      })
      .catch(() => undefined);
  });

  const server: Server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) sendJson(response, 500, { error: oneLine(error) } satisfies ApiError, request);
      else response.destroy();
    });
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    for (const [name, value] of Object.entries(securityHeaders)) response.setHeader(name, value);
    if (!allowedHost(request.headers.host, port)) return sendText(response, 403, "forbidden: this server answers only to 127.0.0.1 and localhost", request);
    const url = new URL(request.url ?? "/", `http://127.0.0.1:${port}`);
    if (request.method === "POST") return handleAnswer(url, request, response);
    if (request.method !== "GET" && request.method !== "HEAD") {
      response.setHeader("Allow", allowedMethods(url.pathname));
      return sendText(response, 405, "method not allowed: the view only reads, and answers held calls by POST", request);
    }
    const given = url.searchParams.get("token");
    if (given !== null) {
      if (!tokensMatch(given, token)) return sendText(response, 403, "forbidden: wrong token — open the URL turnlog view printed", request);
      if (url.pathname === "/" && request.method === "GET") {
        url.searchParams.delete("token");
        response.setHeader("Set-Cookie", viewCookie(port, token));
        response.setHeader("Location", `/${url.search}`);
        return sendText(response, 303, "see /", request);
      }
    } else if (!hasCookie(request)) {
      return sendText(response, 403, "forbidden: no token — open the URL turnlog view printed", request);
    }
    await route(url, request, response);
  }

  function hasCookie(request: IncomingMessage): boolean {
    const cookie = cookieValue(request.headers.cookie, viewCookieName(port));
    return cookie !== undefined && tokensMatch(cookie, token);
  }

  /**
   * An answer to a held call. Every check that needs no body runs first, so a refused request
   * costs no read and appends nothing.
   */
  async function handleAnswer(url: URL, request: IncomingMessage, response: ServerResponse): Promise<void> {
    const match = answerRoute.exec(url.pathname);
    if (answers === undefined || match === null) {
      response.setHeader("Allow", allowedMethods(url.pathname));
      return sendJson(response, 405, { error: answers === undefined ? "method not allowed: this view is read-only" : `method not allowed: ${url.pathname} only reads` } satisfies ApiError, request);
    }
    // The cookie only: a token in a URL opens pages, it never changes the log.
    if (!hasCookie(request)) return sendJson(response, 403, { error: "forbidden: no token cookie — open the URL turnlog view printed" } satisfies ApiError, request);
    if (!allowedOrigin(request.headers.origin, request.headers.host)) return sendJson(response, 403, { error: "forbidden: an answer must come from this view's own page (Origin)" } satisfies ApiError, request);
    const csrf = request.headers[csrfHeader];
    if (typeof csrf !== "string" || !tokensMatch(csrf, csrfToken)) return sendJson(response, 403, { error: "forbidden: no CSRF token — reload the page" } satisfies ApiError, request);
    const contentType = (request.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
    if (contentType !== "application/json") return sendJson(response, 415, { error: "an answer is a JSON body (Content-Type: application/json)" } satisfies ApiError, request);

    const sessionId = decodeSegment(match[1] as string);
    const callId = decodeSegment(match[2] as string);
    if (sessionId === undefined || !isValidSessionId(sessionId) || callId === undefined || callId === "") return sendJson(response, 404, { error: "no such session or call" } satisfies ApiError, request);
    const text = await readBody(request, maxAnswerBytes);
    if (text === undefined) return sendJson(response, 413, { error: `an answer is at most ${maxAnswerBytes} bytes` } satisfies ApiError, request);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return sendJson(response, 400, { error: "the body is not JSON" } satisfies ApiError, request);
    }
    const granted = match[3] === "approve";
    const parsed = answerFromBody(body, granted);
    if ("error" in parsed) return sendJson(response, 400, { error: parsed.error } satisfies ApiError, request);
    try {
      await answers.answer(sessionId, callId, parsed.answer);
    } catch (error) {
      const status = answerRefusal(error);
      if (status === undefined) throw error;
      return sendJson(response, status, { error: oneLine(error) } satisfies ApiError, request);
    }
    // The sources read from the log as it is now: the pages hear of the answer as of any append.
    sendJson(response, 200, { sessionId, callId, granted, by: parsed.answer.by, recordedBy: answers.description } satisfies AnswerResponse, request);
  }

  async function route(url: URL, request: IncomingMessage, response: ServerResponse): Promise<void> {
    const { pathname } = url;
    const asset = assets.files.get(pathname === "/index.html" ? "/" : pathname);
    if (asset !== undefined) {
      response.writeHead(200, { "Content-Type": asset.contentType, "Content-Length": asset.body.length });
      response.end(request.method === "HEAD" ? undefined : asset.body);
      return;
    }
    if (pathname === "/favicon.ico") {
      response.writeHead(204);
      response.end();
      return;
    }
    if (pathname === "/api/live") return openLive(url, request, response);
    let answer: ApiAnswer;
    try {
      answer = await api(pathname, url.searchParams);
    } catch (error) {
      // The reader's errors for a request that names what is not there.
      if (UnknownSessionError.isInstance(error)) answer = refused(404, error.message);
      else if (PositionOutOfRangeError.isInstance(error)) answer = refused(400, error.message);
      else throw error;
    }
    sendJson(response, answer.status, answer.body, request);
  }

  /** The JSON API. */
  async function api(pathname: string, query: URLSearchParams): Promise<ApiAnswer> {
    if (pathname === "/api/access") return ok({ csrfToken, defaultBy, ...(answers !== undefined ? { answers: answers.description } : {}) } satisfies AccessResponse);
    if (pathname === "/api/sessions") return ok(await source.read((reader) => reader.sessions()));
    if (pathname === "/api/machine") return ok(turnMachineGraph());
    const match = /^\/api\/sessions\/([^/]+)(?:\/(state|replay))?$/.exec(pathname);
    if (match === null) return refused(404, `no such path: ${pathname}`);
    const sessionId = decodeSegment(match[1] as string);
    if (sessionId === undefined || !isValidSessionId(sessionId)) return refused(404, "no such session");
    switch (match[2]) {
      case undefined:
        return ok(
          await source.read(async (reader) => {
            const events = await reader.events(sessionId);
            const [audit, view] = await Promise.all([reader.audit(sessionId), reader.view(sessionId)]);
            return sessionTimeline(events, audit, view.status, view.pendingApprovals);
          }),
        );
      case "state": {
        const at = query.get("at");
        const position = at === null ? undefined : Number(at);
        if (position !== undefined && (!Number.isSafeInteger(position) || position < 1)) return refused(400, `at must be a stream position ≥ 1 (got ${at})`);
        return ok(await source.read(async (reader) => positionState(await reader.view(sessionId, position === undefined ? {} : { at: position }))));
      }
      default:
        return ok(await source.read((reader) => reader.replay(sessionId)));
    }
  }

  function openLive(url: URL, request: IncomingMessage, response: ServerResponse): void {
    response.writeHead(200, { "Content-Type": "text/event-stream; charset=utf-8", Connection: "keep-alive" });
    if (request.method === "HEAD") {
      response.end();
      return;
    }
    const controller = new AbortController();
    const keepAlive = setInterval(() => response.write(": keep-alive\n\n"), keepAliveMs);
    const client: LiveClient = {
      send(event, data) {
        if (!response.writableEnded) response.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      },
      end() {
        clearInterval(keepAlive);
        controller.abort();
        live.delete(client);
      },
    };
    response.write("retry: 1000\n\n");
    live.add(client);
    request.on("close", client.end);
    response.on("close", client.end);
    void source
      .read((reader) => reader.sessions())
      .then((sessions: SessionListing[]) => client.send("sessions", { sessions } satisfies LiveSessionsMessage))
      .catch(() => undefined);
    const sessionId = url.searchParams.get("session");
    if (sessionId !== null && isValidSessionId(sessionId)) {
      const after = Number(url.searchParams.get("after") ?? "0");
      source.followSession(sessionId, Number.isSafeInteger(after) && after >= 0 ? after : 0, controller.signal, (length) =>
        client.send("session", { sessionId, length } satisfies LiveSessionMessage),
      );
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("the view server has no TCP address");
  port = address.port;

  return {
    port,
    token,
    url: `http://127.0.0.1:${port}/?token=${token}`,
    async close() {
      stopWatching();
      // Followers stop before the log they follow is closed (followStream asks for that).
      for (const client of [...live]) client.end();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

interface LiveClient {
  send(event: "sessions" | "session", data: unknown): void;
  /** Stops following (and the keep-alive): the connection closed, or the server is stopping. */
  end(): void;
}

function decodeSegment(segment: string): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** The body as text, or undefined when it is longer than `limit` bytes (the rest is not read). */
async function readBody(request: IncomingMessage, limit: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > limit) return undefined;
    chunks.push(buffer);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/**
 * The status for an error an answer may meet, or undefined for a fault: an unknown session (404),
 * a call that is not held or an edit the policy refuses (409), a LevelDB log held by a process
 * that takes no answers or cannot be reached (503: try again once it is done).
 */
function answerRefusal(error: unknown): number | undefined {
  if (UnknownSessionError.isInstance(error)) return 404;
  if (SessionStateError.isInstance(error)) return 409;
  if (OwnerChannelError.isInstance(error)) return 503;
  return undefined;
}

/** The operating-system user the view runs as, for `by` until the person names someone. */
function operatingSystemUser(): string {
  try {
    const name = userInfo().username;
    if (name !== "") return name;
  } catch {
    // No passwd entry for this uid (a container): the environment's name, if any.
  }
  return process.env.USER ?? process.env.USERNAME ?? "turnlog-view";
}

function sendText(response: ServerResponse, status: number, text: string, request: IncomingMessage): void {
  const body = Buffer.from(`${text}\n`, "utf8");
  response.writeHead(status, { "Content-Type": "text/plain; charset=utf-8", "Content-Length": body.length });
  response.end(request.method === "HEAD" ? undefined : body);
}

function sendJson(response: ServerResponse, status: number, value: unknown, request: IncomingMessage): void {
  const body = Buffer.from(JSON.stringify(value), "utf8");
  response.writeHead(status, { "Content-Type": "application/json; charset=utf-8", "Content-Length": body.length });
  response.end(request.method === "HEAD" ? undefined : body);
}

function oneLine(error: unknown): string {
  return describeThrown(error).replace(/\s*\n\s*/g, " ");
}

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { PositionOutOfRangeError, isValidSessionId, turnMachineGraph, type SessionListing } from "../../reader/index.js";
import { UnknownSessionError } from "../../errors/unknown-session-error.js";
import { allowedHost, cookieValue, newViewToken, securityHeaders, tokensMatch, viewCookie, viewCookieName } from "./view-access.js";
import type { ViewAssets } from "./view-assets.js";
import { positionState, sessionTimeline } from "./session-timeline.js";
import type { ApiError, LiveSessionMessage, LiveSessionsMessage } from "./view-api.js";
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

/**
 * Serves `turnlog view`'s page and its JSON API on 127.0.0.1, read-only (GET and HEAD only).
 * Every request must carry the token: `?token=` once (the first `GET /?token=…` sets an HttpOnly,
 * SameSite=Strict cookie and redirects to the URL without it), then the cookie. A request with
 * neither, or with a Host header other than `127.0.0.1:<port>` / `localhost:<port>`, gets 403.
 * Only the bundled files and the API routes exist: no request path reaches the file system.
 *
 * Routes: `/` (the page), `/app.js`, `/app.css`, `/api/sessions`, `/api/machine`,
 * `/api/sessions/<id>`, `/api/sessions/<id>/state?at=N`, `/api/sessions/<id>/replay`, and
 * `/api/live[?session=<id>&after=N]` (server-sent events: `sessions` with the list whenever the
 * log changed, `session` with a followed session's new length).
 *
 * @example
 * const server = await startViewServer({ source, assets: await loadViewAssets() });
 * console.log(server.url);
 */
export async function startViewServer(options: ViewServerOptions): Promise<ViewServer> {
  const token = newViewToken();
  const { source, assets } = options;
  const keepAliveMs = options.keepAliveMs ?? 15_000;
  const live = new Set<LiveClient>();
  let port = 0;

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
    if (request.method !== "GET" && request.method !== "HEAD") {
      response.setHeader("Allow", "GET, HEAD");
      return sendText(response, 405, "method not allowed: the view only reads", request);
    }
    const url = new URL(request.url ?? "/", `http://127.0.0.1:${port}`);
    const given = url.searchParams.get("token");
    if (given !== null) {
      if (!tokensMatch(given, token)) return sendText(response, 403, "forbidden: wrong token — open the URL turnlog view printed", request);
      if (url.pathname === "/" && request.method === "GET") {
        url.searchParams.delete("token");
        response.setHeader("Set-Cookie", viewCookie(port, token));
        response.setHeader("Location", `/${url.search}`);
        return sendText(response, 303, "see /", request);
      }
    } else {
      const cookie = cookieValue(request.headers.cookie, viewCookieName(port));
      if (cookie === undefined || !tokensMatch(cookie, token)) return sendText(response, 403, "forbidden: no token — open the URL turnlog view printed", request);
    }
    await route(url, request, response);
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
            return sessionTimeline(events, audit, view.status);
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

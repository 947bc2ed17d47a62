import { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import { readJsonBody, startLocalHttpServer } from "./local-http-server.js";

/**
 * A real HTTP server for provider adapter tests: started on port 0 inside a test, it answers each
 * request with the next scripted reply and records what it was sent. Adapters are exercised
 * through real sockets and the official SDKs, never through mocked clients.
 */

/** One request as the server saw it. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body (undefined when there was none or it was not JSON). */
  body: unknown;
}

/** How an SSE reply ends after its frames. */
export type SseEnding =
  /** The response ends properly. */
  | "end"
  /** The socket is destroyed mid-stream: the client sees a reset, not an end. */
  | "cut"
  /** Nothing more is sent, and the connection stays open until the client gives up. */
  | "stall";

/** A scripted reply. */
export type ScriptedReply =
  | { kind: "sse"; frames: readonly string[]; ending?: SseEnding; headers?: Record<string, string>; intervalMs?: number }
  | { kind: "status"; status: number; headers?: Record<string, string>; body: (request: RecordedRequest) => unknown }
  /** Never answers, not even with headers, until the client gives up. */
  | { kind: "hang" };

export interface SseTestServer {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  /** Every request received, in order. */
  readonly requests: RecordedRequest[];
  /** Replies not yet served. */
  readonly remaining: number;
  /** Queues replies, served one per request in order. */
  enqueue(...replies: ScriptedReply[]): void;
  /** Stops the server, dropping any stalled connection. */
  close(): Promise<void>;
}

/** Starts a server on a free port. A request beyond the queue gets a 599 the test will notice. */
export async function startSseTestServer(): Promise<SseTestServer> {
  const queue: ScriptedReply[] = [];
  const requests: RecordedRequest[] = [];

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const body = await readJsonBody(request);
    const recorded: RecordedRequest = { method: request.method ?? "", path: request.url ?? "", headers: request.headers, body };
    requests.push(recorded);
    const reply = queue.shift();
    if (reply === undefined) {
      response.writeHead(599, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "sse test server: no reply scripted" } }));
      return;
    }
    if (reply.kind === "hang") return;
    if (reply.kind === "status") {
      response.writeHead(reply.status, { "content-type": "application/json", ...reply.headers }).end(JSON.stringify(reply.body(recorded)));
      return;
    }
    response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", ...reply.headers });
    response.flushHeaders();
    for (const frame of reply.frames) {
      response.write(frame);
      // At least a tick between frames, so they reach the client as separate reads, as a real stream does.
      await new Promise((resolve) => (reply.intervalMs === undefined ? setImmediate(resolve) : setTimeout(resolve, reply.intervalMs)));
    }
    const ending = reply.ending ?? "end";
    if (ending === "end") response.end();
    // Let the frames reach the client before the reset, so it is a cut *mid*-stream.
    else if (ending === "cut") setTimeout(() => response.socket?.destroy(), 20);
  }

  const server = await startLocalHttpServer(handle);

  return {
    url: server.url,
    requests,
    get remaining() {
      return queue.length;
    },
    enqueue(...replies) {
      queue.push(...replies);
    },
    close: () => server.close(),
  };
}

/** An OpenAI Chat Completions stream: one `data:` line per chunk, then `data: [DONE]` unless `done: false`. */
export function openAiSse(chunks: readonly unknown[], options: { done?: boolean; ending?: SseEnding; intervalMs?: number } = {}): ScriptedReply {
  const frames = chunks.map((chunk) => `data: ${JSON.stringify(chunk)}\n\n`);
  if (options.done ?? true) frames.push("data: [DONE]\n\n");
  return { kind: "sse", frames, ...endingAndInterval(options) };
}

/** An Anthropic Messages stream: `event: <type>` and `data: <json>` per event. */
export function anthropicSse(events: readonly { type: string }[], options: { ending?: SseEnding; intervalMs?: number } = {}): ScriptedReply {
  const frames = events.map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`);
  return { kind: "sse", frames, ...endingAndInterval(options) };
}

function endingAndInterval(options: { ending?: SseEnding; intervalMs?: number }): { ending?: SseEnding; intervalMs?: number } {
  return { ...(options.ending !== undefined ? { ending: options.ending } : {}), ...(options.intervalMs !== undefined ? { intervalMs: options.intervalMs } : {}) };
}

/** An error status with a JSON body (OpenAI's `{ error: { message, type } }` shape unless given). */
export function statusReply(status: number, options: { headers?: Record<string, string>; body?: (request: RecordedRequest) => unknown } = {}): ScriptedReply {
  return {
    kind: "status",
    status,
    ...(options.headers !== undefined ? { headers: options.headers } : {}),
    body: options.body ?? (() => ({ error: { message: `scripted status ${status}`, type: "server_error" } })),
  };
}

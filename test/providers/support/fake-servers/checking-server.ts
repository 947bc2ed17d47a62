import { type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from "node:http";
import { readJsonBody, startLocalHttpServer } from "../local-http-server.js";

/**
 * The part every fake provider server shares: a real HTTP server on 127.0.0.1 that checks each
 * request it receives against what it answered before, then streams the next scripted reply as
 * Server-Sent Events. A provider's module (responses-server.ts, anthropic-thinking-server.ts,
 * gemini-server.ts) supplies the check and the frames; this file only moves bytes and keeps the
 * record. One server holds one conversation: each request must carry everything the server said in
 * the earlier replies, as a model provider that keeps no state (`store: false`) needs.
 */

/** One request as the server saw it. */
export interface ReceivedRequest {
  readonly method: string;
  /** The path with its query string (`/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse`). */
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  /** The parsed JSON body (undefined when there was none or it was not JSON). */
  readonly body: unknown;
  /** What the server found wrong with this request; empty when it was right. */
  readonly problems: readonly string[];
}

/** What a fake provider server hands a test. */
export interface FakeProviderServer {
  /** `http://127.0.0.1:<port>` (a provider package's `baseURL` adds the API's path prefix). */
  readonly url: string;
  /** Every request received, in order, each with the problems found in it. */
  readonly requests: readonly ReceivedRequest[];
  /** Every problem found so far, each prefixed with the request's number (`request 2: …`). */
  readonly problems: readonly string[];
  /** Scripted replies not yet served: 0 when the conversation went as scripted. */
  readonly remaining: number;
  /** Stops the server, dropping any open connection. */
  close(): Promise<void>;
}

/**
 * What to do with a request found wrong. `"reject"` answers it with the provider's 400 error, as
 * the real API does for a dropped thinking block or a missing tool result, so a client that sends
 * a broken history fails loudly; `"record"` only records the problems and answers as scripted, for
 * a test that wants to see the whole conversation through.
 */
export type ProblemHandling = "reject" | "record";

/**
 * What every provider's scripted reply may add: a stream cut short, and whether the next request
 * must carry what the reply said.
 */
export interface ReplyControls {
  /**
   * Sends only this many SSE frames, then destroys the socket: the client sees a reset mid-stream,
   * with no terminal event (an `incomplete-stream` failure for turnlog).
   */
  readonly cutAfterFrames?: number;
  /**
   * Whether later requests must echo this reply's items. Default: yes for a reply that ended
   * normally, no for one cut short or ended by the output-token limit, since a client may retry
   * such a turn instead of keeping it. Either way, its items count as sent, so echoing them is no
   * problem.
   */
  readonly mustEcho?: boolean;
}

/** A scripted error answer instead of a stream: a status, the provider's error body, optional headers (`retry-after`). */
export interface ScriptedFailure {
  readonly failure: { readonly status: number; readonly message?: string; readonly headers?: Record<string, string> };
}

/** A reply already streamed, with its 1-based place in the script (failures count), for the problems' wording. */
export interface ServedReply<Reply> {
  readonly reply: Reply;
  readonly number: number;
}

/** A provider's replies as the checks see them: which must be echoed, and every one sent. */
export interface ServedReplies<Reply> {
  /** Replies whose items later requests must carry, oldest first. */
  readonly required: readonly ServedReply<Reply>[];
  /** Every reply streamed so far (cut ones included), oldest first: what the server has said. */
  readonly issued: readonly ServedReply<Reply>[];
}

/** A provider's behaviour, given to {@link startCheckingServer}. */
export interface ProviderBehaviour<Reply extends ReplyControls> {
  /** The provider's name, for the problems' wording. */
  readonly name: string;
  /** The replies (or failures), served one per request in order. */
  readonly script: readonly (Reply | ScriptedFailure)[];
  /**
   * Replies of the same conversation served before this server started (a recorded session a test
   * continues, a fork of one): the first requests must already carry them, and the script's
   * replies are numbered after them.
   */
  readonly alreadyServed?: readonly Reply[];
  /** Whether a reply ended so that a client may retry it rather than keep it (the output-token limit). */
  readonly endsIncomplete: (reply: Reply) => boolean;
  readonly onProblem: ProblemHandling;
  /** The path a request must be sent to (`/v1/responses`); others get a 404. */
  readonly acceptsPath: (path: string) => boolean;
  /**
   * Checks one request against the replies already served (`served`, oldest first). Returns the
   * problems found, each a sentence naming the item concerned.
   */
  readonly check: (body: unknown, served: ServedReplies<Reply>, request: { headers: IncomingHttpHeaders; path: string }) => string[];
  /** The SSE frames of one reply, each a complete `event:`/`data:` block ending in a blank line. */
  readonly frames: (reply: Reply, requestIndex: number) => string[];
  /** The provider's error body for a rejected request. */
  readonly errorBody: (status: number, message: string) => unknown;
}

/** Starts a server for one provider's behaviour on a free port of 127.0.0.1. */
export async function startCheckingServer<Reply extends ReplyControls>(behaviour: ProviderBehaviour<Reply>): Promise<FakeProviderServer> {
  const requests: ReceivedRequest[] = [];
  const problems: string[] = [];
  const earlier = (behaviour.alreadyServed ?? []).map((reply, index) => ({ reply, number: index + 1 }));
  const required: ServedReply<Reply>[] = [...earlier];
  const issued: ServedReply<Reply>[] = [...earlier];
  let served = 0;

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const body = await readJsonBody(request);
    const path = request.url ?? "";
    const number = requests.length + 1;
    const found: string[] = [];
    if (request.method !== "POST" || !behaviour.acceptsPath(path)) found.push(`${request.method ?? "?"} ${path} is not this ${behaviour.name} server's endpoint`);
    else if (body === undefined) found.push("the body is not JSON");
    else {
      found.push(...behaviour.check(body, { required: [...required], issued: [...issued] }, { headers: request.headers, path }));
      if (served >= behaviour.script.length) found.push(`no reply is scripted for it (${behaviour.script.length} scripted)`);
    }
    requests.push({ method: request.method ?? "", path, headers: request.headers, body, problems: found });
    problems.push(...found.map((problem) => `request ${number}: ${problem}`));

    const unanswerable = served >= behaviour.script.length || body === undefined;
    if (found.length > 0 && (behaviour.onProblem === "reject" || unanswerable)) {
      const status = request.method === "POST" && behaviour.acceptsPath(path) ? 400 : 404;
      response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(behaviour.errorBody(status, found.join("; "))));
      return;
    }
    const entry = behaviour.script[served] as Reply | ScriptedFailure;
    const index = earlier.length + served;
    served += 1;
    if ("failure" in entry) {
      const { status, message, headers } = entry.failure;
      response.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(behaviour.errorBody(status, message ?? `scripted status ${status}`)));
      return;
    }
    issued.push({ reply: entry, number: index + 1 });
    const cut = entry.cutAfterFrames !== undefined;
    if (entry.mustEcho ?? (!cut && !behaviour.endsIncomplete(entry))) required.push({ reply: entry, number: index + 1 });
    response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    response.flushHeaders();
    const frames = behaviour.frames(entry, index);
    for (const frame of cut ? frames.slice(0, entry.cutAfterFrames) : frames) {
      response.write(frame);
      // A turn of the event loop between frames, so they reach the client as separate reads, as a real stream does.
      await new Promise((resolve) => setImmediate(resolve));
    }
    if (cut) response.socket?.destroy();
    else response.end();
  }

  const server = await startLocalHttpServer(handle);

  return {
    url: server.url,
    requests,
    problems,
    get remaining() {
      return behaviour.script.length - served;
    },
    close: () => server.close(),
  };
}

/** A JSON object's own fields, or undefined for anything else. */
export function recordOf(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
}

/** An array's elements, or an empty list for anything else. */
export function arrayOf(value: unknown): readonly unknown[] {
  return Array.isArray(value) ? value : [];
}

/** Structural equality of JSON values (object key order ignored), for arguments sent back. */
export function sameJson(left: unknown, right: unknown): boolean {
  if (left === right) return true;
  if (Array.isArray(left) || Array.isArray(right)) {
    if (!Array.isArray(left) || !Array.isArray(right) || left.length !== right.length) return false;
    return left.every((item, index) => sameJson(item, right[index]));
  }
  const leftRecord = recordOf(left);
  const rightRecord = recordOf(right);
  if (leftRecord === undefined || rightRecord === undefined) return false;
  const leftKeys = Object.keys(leftRecord).filter((key) => leftRecord[key] !== undefined);
  const rightKeys = Object.keys(rightRecord).filter((key) => rightRecord[key] !== undefined);
  if (leftKeys.length !== rightKeys.length) return false;
  return leftKeys.every((key) => Object.hasOwn(rightRecord, key) && sameJson(leftRecord[key], rightRecord[key]));
}

/** A JSON string parsed, or undefined when it is not JSON. */
export function parsedJson(text: unknown): unknown {
  if (typeof text !== "string") return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * Checks that items found at `positions` (in the order the server emitted them) appear in the
 * request in that same order; a reasoning item moved after its function call is a different history.
 */
export function orderProblems(positions: readonly { label: string; position: number }[]): string[] {
  const problems: string[] = [];
  for (let index = 1; index < positions.length; index += 1) {
    const before = positions[index - 1];
    const after = positions[index];
    if (before !== undefined && after !== undefined && after.position < before.position) {
      problems.push(`${after.label} comes before ${before.label}, the reverse of the order they were sent in`);
    }
  }
  return problems;
}

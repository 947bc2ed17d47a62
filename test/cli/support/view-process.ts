/**
 * `turnlog view` as users start it: the built bin as a child process, its URL read from what it
 * prints, stopped with SIGINT. Plus a small client for its server-sent events.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { get, request as httpRequest, type IncomingMessage } from "node:http";
import path from "node:path";
import { repoRoot } from "./turnlog-bin.js";

/** A running `turnlog view`. */
export interface ViewProcess {
  /** The URL it printed, token (and `#/session/…`) included. */
  url: string;
  /** `http://127.0.0.1:<port>`. */
  origin: string;
  port: number;
  token: string;
  /** Everything it printed so far. */
  readonly stdout: string;
  readonly stderr: string;
  /** Sends SIGINT and resolves with the exit code. */
  stop(): Promise<number | null>;
}

const urlPattern = /(http:\/\/127\.0\.0\.1:(\d+)\/\?token=([A-Za-z0-9_-]+))(#\S*)?/;

/**
 * Starts `turnlog view <args>` in `cwd` and resolves once it printed its URL (rejects when it
 * exits first, with what it wrote on stderr). The log variables are cleared unless `env` sets them.
 */
export function startView(args: readonly string[], options: { cwd: string; env?: Record<string, string | undefined> }): Promise<ViewProcess> {
  const env: Record<string, string | undefined> = { ...process.env, NO_COLOR: "1", FORCE_COLOR: undefined, TURNLOG_DIR: undefined, TURNLOG_LOG: undefined, TURNLOG_SCHEMA: undefined, ...options.env };
  for (const key of Object.keys(env)) if (env[key] === undefined) delete env[key];
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [path.join(repoRoot, "bin", "turnlog.js"), "view", ...args], { cwd: options.cwd, env: env as NodeJS.ProcessEnv });
  let stdout = "";
  let stderr = "";
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`turnlog view printed no URL in 20 s; stdout: ${stdout} stderr: ${stderr}`));
    }, 20_000);
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = urlPattern.exec(stdout);
      if (match === null) return;
      clearTimeout(timer);
      const port = Number(match[2]);
      resolve({
        url: `${match[1]}${match[4] ?? ""}`,
        origin: `http://127.0.0.1:${port}`,
        port,
        token: match[3] as string,
        get stdout() {
          return stdout;
        },
        get stderr() {
          return stderr;
        },
        async stop() {
          if (child.exitCode === null && child.signalCode === null) child.kill("SIGINT");
          return exited;
        },
      });
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`turnlog view exited (${code}) before printing its URL; stderr: ${stderr}`));
    });
  });
}

/** One server-sent event. */
export interface ServerSentEvent {
  event: string;
  data: string;
}

/** A connection to a server-sent-events URL, with the events received so far. */
export interface EventStream {
  readonly status: number;
  readonly events: ServerSentEvent[];
  /** Resolves with the first event (received or to come) that `matches`; rejects after `timeoutMs`. */
  waitFor(matches: (event: ServerSentEvent) => boolean, timeoutMs?: number): Promise<ServerSentEvent>;
  close(): void;
}

/** Opens `url` with `headers` and parses what arrives as server-sent events. */
export function openEventStream(url: string, headers: Record<string, string>): Promise<EventStream> {
  return new Promise((resolve, reject) => {
    const request = get(url, { headers: { Accept: "text/event-stream", ...headers } }, (response: IncomingMessage) => {
      const events: ServerSentEvent[] = [];
      const waiters: { matches: (event: ServerSentEvent) => boolean; resolve: (event: ServerSentEvent) => void }[] = [];
      let buffer = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let event = "message";
          const data: string[] = [];
          for (const line of block.split("\n")) {
            if (line.startsWith("event: ")) event = line.slice(7);
            else if (line.startsWith("data: ")) data.push(line.slice(6));
          }
          if (data.length === 0) continue;
          const received = { event, data: data.join("\n") };
          events.push(received);
          for (const waiter of [...waiters]) {
            if (!waiter.matches(received)) continue;
            waiters.splice(waiters.indexOf(waiter), 1);
            waiter.resolve(received);
          }
        }
      });
      resolve({
        status: response.statusCode ?? 0,
        events,
        waitFor(matches, timeoutMs = 15_000) {
          const found = events.find(matches);
          if (found !== undefined) return Promise.resolve(found);
          return new Promise((resolveEvent, rejectEvent) => {
            const timer = setTimeout(() => rejectEvent(new Error(`no matching server-sent event in ${timeoutMs} ms; got ${JSON.stringify(events)}`)), timeoutMs);
            waiters.push({
              matches,
              resolve: (event) => {
                clearTimeout(timer);
                resolveEvent(event);
              },
            });
          });
        },
        close() {
          request.destroy();
        },
      });
    });
    request.on("error", reject);
  });
}

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTP request, headers exactly as given (no Host, Origin or Cookie added). */
export function send(port: number, rawPath: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: "127.0.0.1", port, path: rawPath, method: options.method ?? "GET", headers: options.headers ?? {} }, (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        body += chunk;
      });
      response.on("end", () => resolve({ status: response.statusCode ?? 0, headers: response.headers, body }));
    });
    request.on("error", reject);
    request.end(options.body);
  });
}

import { once } from "node:events";
import { mkdir, open, readFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";

/** A running witness service ({@link startWitnessServer}). */
export interface WitnessServer {
  /** `http://host:port`: what `--witness` takes. */
  url: string;
  close(): Promise<void>;
}

/** Log names the service accepts: what `logIdentity` makes (letters, digits, `.`, `_`, `-`). */
const logNamePattern = /^[A-Za-z0-9._-]{1,120}$/;
/** A record is a seal's head: a few hundred bytes. Anything much larger is refused. */
const maximumBody = 64 * 1024;

/**
 * The append-only witness service `turnlog witness serve` runs (docs/log.md, "The HTTP witness"):
 * each log's records go to `<directory>/<log name>.jsonl`, one JSON line per record, opened only
 * for appending and fsynced before the answer — no request can replace or remove one. Run it as
 * another user, or on another machine, so that whoever can rewrite a log cannot roll its witness
 * back. It keeps records only: it does not authenticate clients (put it behind what does, or on a
 * network only the hosts reach), and anyone who can reach it can add records, never take them away.
 *
 * @example
 * const server = await startWitnessServer({ directory: "/srv/turnlog-witness", port: 7117 });
 * console.log(server.url); // http://127.0.0.1:7117
 */
export async function startWitnessServer(options: { directory: string; host?: string; port?: number }): Promise<WitnessServer> {
  const directory = path.resolve(options.directory);
  await mkdir(directory, { recursive: true, mode: 0o700 });
  // Appends to one file run one after another, so that lines never interleave.
  let writing: Promise<unknown> = Promise.resolve();
  const append = (file: string, line: string) => {
    const result = writing.then(async () => {
      const handle = await open(file, "a", 0o600);
      try {
        await handle.appendFile(line);
        await handle.sync();
      } finally {
        await handle.close();
      }
    });
    writing = result.catch(() => undefined);
    return result;
  };
  const server: Server = createServer((request, response) => {
    handle(request, response).catch(() => send(response, 500, { error: "the record could not be kept" }));
  });

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const match = /^\/logs\/([^/]+)(\/seals)?$/.exec(new URL(request.url ?? "/", "http://witness").pathname);
    const name = match?.[1] !== undefined ? decodeURIComponent(match[1]) : undefined;
    if (name === undefined || !logNamePattern.test(name)) return send(response, 404, { error: "no such log" });
    const file = path.join(directory, `${name}.jsonl`);
    const seals = match?.[2] !== undefined;
    if (!seals && request.method === "PUT") {
      const body = await readBody(request);
      const records = await readRecords(file);
      if (records !== undefined) return send(response, 200, {});
      await append(file, `${JSON.stringify({ opened: { label: typeof (body as { label?: unknown })?.label === "string" ? (body as { label: string }).label : null } })}\n`);
      return send(response, 201, {});
    }
    if (!seals && request.method === "GET") return (await readRecords(file)) !== undefined ? send(response, 200, {}) : send(response, 404, { error: "no such log" });
    if (seals && request.method === "POST") {
      if ((await readRecords(file)) === undefined) return send(response, 404, { error: "no such log: PUT it first" });
      const body = await readBody(request);
      if (typeof body !== "object" || body === null || typeof (body as { stream?: unknown }).stream !== "string") return send(response, 400, { error: "a record is a seal's { stream, version, hash, signature, sealedAt, keyId }" });
      await append(file, `${JSON.stringify({ record: body })}\n`);
      return send(response, 201, {});
    }
    if (seals && request.method === "GET") {
      const records = await readRecords(file);
      return records === undefined ? send(response, 404, { error: "no such log" }) : send(response, 200, { records });
    }
    send(response, 405, { error: "records are only ever added" });
  }

  server.listen(options.port ?? 0, options.host ?? "127.0.0.1");
  await Promise.race([once(server, "listening"), once(server, "error").then(([error]) => Promise.reject(error as Error))]);
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

/** The records of a log's file in order, or `undefined` for a log never opened. A last line cut short by a crash is skipped. */
async function readRecords(file: string): Promise<unknown[] | undefined> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw error;
  }
  const lines = text.split("\n");
  lines.pop();
  const records: unknown[] = [];
  for (const line of lines) {
    const entry = JSON.parse(line) as { record?: unknown };
    if (entry.record !== undefined) records.push(entry.record);
  }
  return records;
}

async function readBody(request: IncomingMessage): Promise<unknown> {
  let text = "";
  request.setEncoding("utf8");
  for await (const chunk of request) {
    text += chunk as string;
    if (text.length > maximumBody) throw new RangeError("body too large");
  }
  try {
    return text === "" ? undefined : (JSON.parse(text) as unknown);
  } catch {
    return undefined;
  }
}

function send(response: ServerResponse, status: number, body: unknown): void {
  if (response.headersSent) return;
  response.writeHead(status, { "content-type": "application/json" });
  response.end(JSON.stringify(body));
}

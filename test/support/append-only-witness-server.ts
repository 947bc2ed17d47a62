/**
 * A tiny witness service on 127.0.0.1 for the HTTP witness tests, speaking the protocol of
 * src/log/seal/http-witness.ts (docs/log.md, "The HTTP witness"): it keeps every record it is
 * given, in order, and has no way to replace or remove one — what makes a witness out of reach of
 * whoever can rewrite the log. Anything but the three requests is refused (405).
 */
import { once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface AppendOnlyWitnessServer {
  url: string;
  /** Every record per log name, in the order added (what the service holds). */
  records: Map<string, unknown[]>;
  /** Requests refused, as `METHOD path`. */
  refused: string[];
  close(): Promise<void>;
}

export async function startAppendOnlyWitnessServer(): Promise<AppendOnlyWitnessServer> {
  const logs = new Map<string, { label: unknown; records: unknown[] }>();
  const refused: string[] = [];
  const server = createServer((request, response) => {
    void handle(request, response).catch(() => send(response, 500, { error: "internal" }));
  });
  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const match = /^\/logs\/([^/]+)(\/seals)?$/.exec(new URL(request.url ?? "/", "http://witness").pathname);
    const name = match?.[1] !== undefined ? decodeURIComponent(match[1]) : undefined;
    const seals = match?.[2] !== undefined;
    const body = await readBody(request);
    if (name !== undefined && !seals && request.method === "PUT") {
      if (logs.has(name)) return send(response, 200, {});
      logs.set(name, { label: (body as { label?: unknown } | undefined)?.label, records: [] });
      return send(response, 201, {});
    }
    if (name !== undefined && !seals && request.method === "GET") return logs.has(name) ? send(response, 200, { label: logs.get(name)?.label }) : send(response, 404, {});
    if (name !== undefined && seals && request.method === "POST") {
      const log = logs.get(name);
      if (log === undefined) return send(response, 404, {});
      log.records.push(body);
      return send(response, 201, {});
    }
    if (name !== undefined && seals && request.method === "GET") {
      const log = logs.get(name);
      return log === undefined ? send(response, 404, {}) : send(response, 200, { records: log.records });
    }
    refused.push(`${request.method ?? "?"} ${request.url ?? "?"}`);
    send(response, 405, { error: "records are only ever added" });
  }
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get records() {
      return new Map([...logs].map(([name, log]) => [name, log.records]));
    },
    refused,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

async function readBody(request: IncomingMessage): Promise<unknown> {
  let text = "";
  request.setEncoding("utf8");
  for await (const chunk of request) text += chunk as string;
  return text === "" ? undefined : (JSON.parse(text) as unknown);
}

function send(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { "content-type": "application/json" });
  response.end(JSON.stringify(body));
}

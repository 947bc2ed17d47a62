import type { IncomingMessage } from "node:http";

/**
 * A request's body parsed as JSON, as the fake provider servers record it: `undefined` when there
 * was none or it was not JSON (the test then sees what the client really sent, not a crash).
 */
export async function readJsonBody(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString("utf8");
  try {
    return text === "" ? undefined : JSON.parse(text);
  } catch {
    return undefined;
  }
}

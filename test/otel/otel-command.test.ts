import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { expectOneCleanLine, useDemoSession } from "../cli/support/demo-fixture.js";
import { runTurnlogInProcess } from "../cli/support/turnlog-in-process.js";
import { normalizeOtlp, type NormalSpan } from "./support/otel-spans.js";

interface Received {
  method: string;
  path: string;
  contentType: string | undefined;
  headers: IncomingMessage["headers"];
  body: string;
}

/** A local OTLP/HTTP receiver on 127.0.0.1 that answers every request with `status`. */
async function receiver(status: number): Promise<{ url: string; received: Received[]; server: Server }> {
  const received: Received[] = [];
  const server = createServer((request: IncomingMessage, response) => {
    let body = "";
    request.setEncoding("utf8");
    request.on("data", (chunk: string) => (body += chunk));
    request.on("end", () => {
      received.push({ method: request.method ?? "", path: request.url ?? "", contentType: request.headers["content-type"], headers: request.headers, body });
      response.writeHead(status, { "content-type": "application/json" }).end(status === 200 ? "{}" : '{"message":"nope"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, received, server };
}

describe("turnlog otel", () => {
  const demo = useDemoSession("otel");
  const servers: Server[] = [];
  afterEach(async () => {
    await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
  });

  it("gives the demo session its span tree: invoke_agent over its chat and execute_tool spans", async () => {
    const run = await demo.turnlog("otel", demo.sessionId, "--dir", demo.logDir);
    expect(run.code).toBe(0);
    const spans = normalizeOtlp(JSON.parse(run.stdout));
    const sends = spans.filter((span) => span.name === "invoke_agent");
    expect(sends).toHaveLength(2);
    for (const send of sends) expect(send).toMatchObject({ parent: null, kind: 1, attributes: { "gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": demo.sessionId } });
    expect(sends.map((send) => [send.attributes["turnlog.outcome"], send.attributes["turnlog.reason"]])).toEqual([
      ["completed", undefined],
      ["stopped", "budget:max-iterations"],
    ]);
    const children = (send: NormalSpan) => spans.filter((span) => span.parent === send.label).map((span) => span.name);
    expect(children(sends[0]!)).toEqual(expect.arrayContaining(["chat scripted-demo", "execute_tool read_file", "execute_tool list_dir", "execute_tool write_file", "execute_tool run_command"]));
    expect(children(sends[1]!).filter((name) => name.startsWith("chat"))).toHaveLength(4);
    // The demo's held calls: one approved, one denied by the person, one blocked by the gate.
    const byCall = (id: string) => spans.find((span) => span.attributes["gen_ai.tool.call.id"] === id);
    expect(byCall("call_save_summary")).toMatchObject({ attributes: { "turnlog.approver": "demo-user", "turnlog.outcome": "succeeded" } });
    expect(byCall("call_force_push")).toMatchObject({ status: { code: 2 }, attributes: { "turnlog.outcome": "denied", "error.type": "denied-by-user" } });
    for (const span of spans) {
      expect(span.traceRoot).toBe(span.parent === null ? span.label : spans.find((candidate) => candidate.label === span.parent)?.label);
      expect(span.kind).toBe(span.name.startsWith("chat") ? 3 : 1);
    }
  });

  it("POSTs OTLP/JSON to an OTLP/HTTP endpoint, at /v1/traces when the URL has no path", async () => {
    const { url, received, server } = await receiver(200);
    servers.push(server);
    const run = await demo.turnlog("otel", demo.sessionId, "--dir", demo.logDir, "--endpoint", url);
    expect(run.code).toBe(0);
    expect(run.stdout).toBe("");
    expect(run.stderr).toMatch(new RegExp(`^sent \\d+ spans of session ${demo.sessionId} to ${url}/v1/traces: HTTP 200\\n$`));
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({ method: "POST", path: "/v1/traces", contentType: "application/json" });
    const printed = await demo.turnlog("otel", demo.sessionId, "--dir", demo.logDir);
    expect(normalizeOtlp(JSON.parse(received[0]!.body))).toEqual(normalizeOtlp(JSON.parse(printed.stdout)));
  });

  it("keeps a path the endpoint URL has", async () => {
    const { url, received, server } = await receiver(200);
    servers.push(server);
    const run = await demo.turnlog("otel", demo.sessionId, "--dir", demo.logDir, "--endpoint", `${url}/api/public/otel/v1/traces`);
    expect(run.code).toBe(0);
    expect(received[0]?.path).toBe("/api/public/otel/v1/traces");
  });

  it("sends the headers of $OTEL_EXPORTER_OTLP_HEADERS and --header (a vendor's key), and never prints them", async () => {
    const { url, received, server } = await receiver(200);
    servers.push(server);
    const run = await runTurnlogInProcess(["otel", demo.sessionId, "--dir", demo.logDir, "--endpoint", url, "--header", "x-team: blue"], {
      cwd: demo.workDir,
      env: { OTEL_EXPORTER_OTLP_HEADERS: "authorization=Basic%20c2VjcmV0LXZhbHVl,x-extra=1" },
    });
    expect(run.code).toBe(0);
    expect(received[0]?.headers).toMatchObject({ authorization: "Basic c2VjcmV0LXZhbHVl", "x-extra": "1", "x-team": "blue", "content-type": "application/json" });
    expect(run.stdout + run.stderr).not.toContain("c2VjcmV0LXZhbHVl");
    const bad = await demo.turnlog("otel", demo.sessionId, "--dir", demo.logDir, "--endpoint", url, "--header", "no separator");
    expect(bad.code).toBe(2);
    expectOneCleanLine(bad.stderr);
  });

  it("fails with one clean line when the endpoint answers 500", async () => {
    const { url, server } = await receiver(500);
    servers.push(server);
    const run = await demo.turnlog("otel", demo.sessionId, "--dir", demo.logDir, "--endpoint", url);
    expect(run.code).toBe(1);
    expectOneCleanLine(run.stderr);
    expect(run.stderr).toContain("answered HTTP 500");
  });

  it("fails with one clean line when nothing listens at the endpoint", async () => {
    const { url, server } = await receiver(200);
    await new Promise((resolve) => server.close(resolve));
    const run = await demo.turnlog("otel", demo.sessionId, "--dir", demo.logDir, "--endpoint", url);
    expect(run.code).toBe(1);
    expectOneCleanLine(run.stderr);
    expect(run.stderr).toContain("ECONNREFUSED");
  });

  it("refuses an endpoint that is not an http(s) URL as a usage error, and an unknown session as a failure", async () => {
    const bad = await demo.turnlog("otel", demo.sessionId, "--dir", demo.logDir, "--endpoint", "localhost:4318");
    expect(bad.code).toBe(2);
    expectOneCleanLine(bad.stderr);
    const unknown = await demo.turnlog("otel", "no-such-session", "--dir", demo.logDir);
    expect(unknown.code).toBe(1);
    expectOneCleanLine(unknown.stderr);
  });
});

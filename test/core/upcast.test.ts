import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { RecordedEvent } from "../../src/index.js";
import { verifyChain } from "../../src/log/hash-chain.js";
import { verifyReplay } from "../../src/replay/replay-verifier.js";
import { currentSchemaVersion, upcastEvent } from "../../src/core/upcast.js";
import { ToolRegistry } from "../../src/tools/tool-registry.js";
import { resolveRealPath } from "../../src/util/real-path.js";
import { workspace } from "../support/tools.js";

// Never regenerated: see test/fixtures/logs/README.md.
const load = (name: string) => JSON.parse(readFileSync(new URL(`../fixtures/logs/${name}`, import.meta.url), "utf8")) as RecordedEvent[];

describe("golden log: v0-session.json (schema version 0, before provider.maxAttempts)", () => {
  const events = load("v0-session.json");

  it("is a version-0 log, without the field the upcaster restores", () => {
    expect(events[0]?.meta.schemaVersion).toBe(0);
    expect((events[0]?.data as { provider: Record<string, unknown> }).provider).not.toHaveProperty("maxAttempts");
  });

  it("replays identical through the upcaster", async () => {
    const report = await verifyReplay(events, { registry: new ToolRegistry(workspace().tools), gate: { realPath: resolveRealPath } });
    expect(report.divergences).toEqual([]);
    expect(report).toMatchObject({ identical: true, changes: [] });
    expect(report.compared).toBeGreaterThan(0);
  });

  it("would diverge without the upcaster: the retry after the transport failure needs maxAttempts", async () => {
    const asIfCurrent = events.map((event, index) => (index === 0 ? { ...event, meta: { ...event.meta, schemaVersion: currentSchemaVersion } } : event));
    const report = await verifyReplay(asIfCurrent, { registry: new ToolRegistry(workspace().tools), gate: { realPath: resolveRealPath } });
    expect(report.identical).toBe(false);
  });

  it("has an intact hash chain over the events as written", () => {
    const result = verifyChain(
      "session-golden-1",
      events.map((event) => ({ position: event.meta.streamPosition, raw: JSON.stringify(event) })),
    );
    expect(result).toMatchObject({ ok: true, checked: events.length });
  });
});

describe("upcastEvent", () => {
  const started = load("v0-session.json")[0]!;

  it("brings a v0 session.started to the current version with maxAttempts 3, keeping the recorded hash", () => {
    const upcast = upcastEvent(started);
    expect(upcast.meta).toEqual({ ...started.meta, schemaVersion: currentSchemaVersion });
    expect((upcast.data as { provider: unknown }).provider).toEqual({ id: "scripted", format: "openai-chat", maxAttempts: 3 });
    expect((started.data as { provider: Record<string, unknown> }).provider).not.toHaveProperty("maxAttempts"); // not mutated
  });

  it("keeps a v0 maxAttempts that is there, and returns current events as they are", () => {
    const withAttempts = { ...started, data: { ...(started.data as object), provider: { id: "p", format: "openai-chat", maxAttempts: 5 } } };
    expect((upcastEvent(withAttempts).data as { provider: { maxAttempts: number } }).provider.maxAttempts).toBe(5);
    const current = load("approval-session.json")[1]!;
    expect(upcastEvent(current)).toBe(current);
  });

  it("only bumps the version of a v0 event type that has no upcaster", () => {
    const message = { ...load("approval-session.json")[1]!, meta: { ...load("approval-session.json")[1]!.meta, schemaVersion: 0 } };
    expect(upcastEvent(message)).toEqual({ ...message, meta: { ...message.meta, schemaVersion: currentSchemaVersion } });
  });
});

import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { eventCatalogue, eventTypes, isDecisionEvent, parseEvent } from "../../src/contracts/events.js";
import { renderEventsDoc } from "../../scripts/events-doc.js";

// The catalogue of docs/events.md, with each event's kind.
const designCatalogue: Record<string, "input" | "decision"> = {
  "session.started": "input",
  "session.config.changed": "input",
  "session.user_message.added": "input",
  "turn.started": "decision",
  "turn.provider.requested": "decision",
  "turn.provider.responded": "input",
  "turn.provider.failed": "input",
  "turn.tool_calls.normalized": "decision",
  "turn.tool_calls.planned": "decision",
  "turn.tool_calls.gated": "decision",
  "turn.approval.granted": "input",
  "turn.approval.denied": "input",
  "turn.tool.started": "decision",
  "turn.tool.succeeded": "input",
  "turn.tool.failed": "input",
  "turn.tool.interrupted": "input",
  "turn.results.packetized": "decision",
  "turn.completed": "decision",
  "turn.continued": "decision",
  "turn.stopped": "decision",
  "turn.failed": "decision",
  "session.history.compacted": "decision",
  "session.diagnostic.recorded": "decision",
};

// Added here beyond the design's minimum: host-routed calls (HostToolExecutor).
const addedCatalogue: Record<string, "input" | "decision"> = {
  "session.native_tool.requested": "input",
  "session.native_tool.decided": "decision",
  "session.native_tool.completed": "input",
  // Decision versions (docs/replay.md#decision-versions): facts a decision reads, recorded so replay never reads the machine.
  "session.decisions.upgraded": "input",
  "session.tools.changed": "input",
  "session.environment.observed": "input",
  // The host's cancel, an input of its own; the turn.stopped after it is a decision (docs/replay.md, "Cancel").
  "turn.cancel.requested": "input",
};

describe("event catalogue", () => {
  it("has a schema for every event of the design (and the few added since), with its kind", () => {
    expect(Object.fromEntries(eventTypes.map((type) => [type, eventCatalogue[type].kind]))).toEqual({ ...designCatalogue, ...addedCatalogue });
  });

  it("names events domain.noun.verbed in snake_case segments", () => {
    for (const type of eventTypes) expect(type).toMatch(/^[a-z]+(\.[a-z_]+)+$/);
  });

  it("rejects an event whose data does not fit, naming the field", () => {
    expect(() => parseEvent({ type: "turn.started", data: { turnId: "t", turnSeq: 0, iteration: 1 } })).toThrow(/turnSeq/);
    expect(() => parseEvent({ type: "turn.tool.exploded", data: {} })).toThrow();
  });

  it("keeps diagnostics to counts and reason enums", () => {
    const base = { type: "session.diagnostic.recorded", data: { name: "structured-tool-history-selected", counts: { groups: 2 }, reasons: ["budget_fallback"] } };
    expect(() => parseEvent(base)).not.toThrow();
    expect(() => parseEvent({ ...base, data: { ...base.data, reasons: ["cat /etc/passwd"] } })).toThrow();
  });

  it("tells decisions from inputs, and an unknown or prototype name is neither", () => {
    expect(isDecisionEvent("turn.tool_calls.gated")).toBe(true);
    expect(isDecisionEvent("turn.tool.succeeded")).toBe(false);
    expect(isDecisionEvent("__proto__")).toBe(false);
    expect(isDecisionEvent("constructor")).toBe(false);
  });

  it("docs/events.md is generated from the schemas and current (run `npm run docs:events`)", () => {
    expect(readFileSync(new URL("../../docs/events.md", import.meta.url), "utf8")).toBe(renderEventsDoc());
  });
});

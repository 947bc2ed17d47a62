import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import type { RecordedEvent } from "../../src/index.js";
import { verifyChain } from "../../src/log/hash-chain.js";
import { foldEvents } from "../../src/projections/projection.js";
import { sessionStateProjection } from "../../src/projections/session-state.js";
import { verifyReplay } from "../../src/replay/replay-verifier.js";
import { ToolRegistry } from "../../src/tools/tool-registry.js";
import { resolveRealPath } from "../../src/util/real-path.js";
import { workspace } from "../support/tools.js";

// Golden logs are recorded once and never regenerated (like Temporal's replay fixtures): a change
// that cannot replay an old log fails here instead of in a user's incident.
const load = (name: string) => JSON.parse(readFileSync(new URL(`../fixtures/logs/${name}`, import.meta.url), "utf8")) as RecordedEvent[];

describe("golden log: approval-session.json", () => {
  // A read, a derived ID, an approved write, malformed JSON, an unknown tool, a transport failure
  // and its retry, a failing tool, a denied write, and a final answer.
  const events = load("approval-session.json");

  it("replays identical under the current code", async () => {
    const report = await verifyReplay(events, { registry: new ToolRegistry(workspace().tools), gate: { realPath: resolveRealPath } });
    expect(report.divergences).toEqual([]);
    expect(report.compared).toBe(events.filter((event) => !["session.started", "session.user_message.added", "turn.provider.responded", "turn.provider.failed", "turn.approval.granted", "turn.approval.denied", "turn.tool.succeeded", "turn.tool.failed"].includes(event.type)).length);
  });

  it("still has an intact hash chain", () => {
    const result = verifyChain(
      "session-golden-1",
      events.map((event) => ({ position: event.meta.streamPosition, raw: JSON.stringify(event) })),
    );
    expect(result).toMatchObject({ ok: true, checked: events.length });
  });

  it("folds to the session its story tells, the same way twice", () => {
    const state = foldEvents(sessionStateProjection, events);
    expect(foldEvents(sessionStateProjection, events)).toEqual(state);
    expect(state.lastOutcome).toEqual({ status: "completed", text: "Wrote c.txt; d.txt was not written." });
    const calls = [...state.calls.values()];
    expect(calls.map((call) => [call.name, call.status])).toEqual([
      ["read_file", "succeeded"],
      ["read_file", "succeeded"],
      ["write_file", "succeeded"],
      ["read_file", "rejected"],
      ["rm_rf", "rejected"],
      ["read_file", "failed"],
      ["write_file", "denied"],
    ]);
    expect(calls[2]?.approval).toEqual({ granted: true, by: "alice", note: "looks right", scope: "call", fingerprint: calls[2]?.decision?.fingerprint });
    expect(state.turns.map((turn) => turn.status)).toEqual(["continued", "continued", "completed"]);
  });
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { buildHistoryUnits } from "../src/history/history-units.js";
import { providerFormat, providerFormatNames } from "../src/providers/formats.js";
import { stableToolCallId } from "../src/tools/stable-tool-call-id.js";
import { HistorySession } from "../test/support/history-sessions.js";

// History units are decided once for every format (a session may move to another provider), so a
// call history sends natively must be one every format's API accepts: each adapter's ID rules
// (the `index.ts` of each format's folder under src/providers/) hold the format-neutral choice in history-units.ts to that.
const adapters = providerFormatNames.map((name) => providerFormat(name));

const idCharacter = fc.constantFrom(..."abcXYZ019_-.:/ é+".split(""));
const modelId = fc.oneof(fc.stringMatching(/^[a-zA-Z0-9_-]{1,45}$/), fc.string({ unit: idCharacter, minLength: 1, maxLength: 50 }), fc.string({ minLength: 1, maxLength: 50 }));
const toolName = fc.oneof(fc.stringMatching(/^[a-zA-Z0-9_-]{1,70}$/), fc.string({ unit: idCharacter, minLength: 1, maxLength: 70 }), fc.constantFrom("read_file", "a".repeat(64), "a".repeat(65)));

describe("provider format ID rules", () => {
  it("a call history sends as a native tool group has an ID and a name every format accepts", () => {
    let native = 0;
    fc.assert(
      fc.property(modelId, toolName, (id, name) => {
        const state = new HistorySession()
          .user("go")
          .toolTurn({ calls: [{ id, name }], results: [{ content: "ok" }] })
          .answer("done")
          .user("next")
          .state();
        for (const unit of buildHistoryUnits(state).history) {
          if (unit.kind !== "tool-group") continue;
          native += 1;
          for (const call of unit.calls) {
            for (const adapter of adapters) {
              expect(adapter.ids.isValidToolCallId(call.id), `${adapter.name} call ID ${JSON.stringify(call.id)}`).toBe(true);
              expect(adapter.ids.isValidToolName(call.name), `${adapter.name} tool name ${JSON.stringify(call.name)}`).toBe(true);
            }
          }
        }
      }),
      { numRuns: 300 },
    );
    // The generated IDs and names reach both sides: many go native, the rest flat.
    expect(native).toBeGreaterThan(30);
  });

  it("an ID turnlog derives for a call without one is accepted by every format", () => {
    fc.assert(
      fc.property(fc.string(), fc.nat(), fc.nat(20), fc.string(), fc.string(), (sessionId, turnSeq, index, name, argumentsText) => {
        const id = stableToolCallId({ sessionId, turnSeq, index, name, argumentsText });
        for (const adapter of adapters) expect(adapter.ids.isValidToolCallId(id)).toBe(true);
      }),
    );
  });
});

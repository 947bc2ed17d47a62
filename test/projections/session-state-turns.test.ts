import { describe, expect, it } from "vitest";
import { readEvent, type RecordedEvent, type RecordedTurnlogEvent } from "../../src/index.js";
import { SessionFold } from "../../src/core/session-fold.js";
import { applyEvent } from "../../src/projections/projection.js";
import { sessionStateProjection } from "../../src/projections/session-state.js";

/** A `turn.started` as a log hands it over (parsed from its stored JSON text), read as every read does. */
function turnStarted(dataText: string): RecordedTurnlogEvent {
  return readEvent(JSON.parse(
    `{"type":"turn.started","data":${dataText},"meta":{"eventId":"e1","stream":"session-s","streamPosition":1,"globalPosition":1,"recordedAt":"2026-01-01T00:00:00.000Z","schemaVersion":1,"prevHash":"","hash":""}}`,
  ) as RecordedEvent);
}

describe("a turn's state, made from its turn.started", () => {
  it("holds the event's data first, in its order, then the turn's own fields", () => {
    const state = applyEvent(sessionStateProjection, sessionStateProjection.initialState(), turnStarted('{"turnId":"turn-1","turnSeq":1,"iteration":1}'));
    const turn = state.turns[0];
    expect(Object.keys(turn ?? {})).toEqual(["turnId", "turnSeq", "iteration", "status", "attempt", "failures", "callIds", "startPosition"]);
    expect(turn).toEqual({ turnId: "turn-1", turnSeq: 1, iteration: 1, status: "active", attempt: 0, failures: [], callIds: [], startPosition: 1 });
  });

  it('keeps a "__proto__" key of the data as a plain own property, never as the prototype, in place and immutably', () => {
    const event = turnStarted('{"turnId":"turn-1","turnSeq":1,"iteration":1,"__proto__":{"polluted":true}}');
    const immutable = applyEvent(sessionStateProjection, sessionStateProjection.initialState(), event).turns[0];
    const fold = new SessionFold({ mutable: true });
    fold.apply(event);
    const inPlace = fold.state.turns[0];
    for (const turn of [immutable, inPlace]) {
      expect(Object.getPrototypeOf(turn)).toBe(Object.prototype);
      expect(Object.hasOwn(turn ?? {}, "__proto__")).toBe(true);
      expect((turn as unknown as { polluted?: boolean }).polluted).toBeUndefined();
      expect(turn?.status).toBe("active");
    }
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
  });
});

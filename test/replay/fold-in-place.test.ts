import { readdirSync, readFileSync } from "node:fs";
import { beforeAll, describe, expect, it } from "vitest";
import { createRuntime, SnapshotCache } from "../../src/index.js";
import type { EventLog, ReadStreamOptions, RecordedEvent, RecordedTurnlogEvent, SessionState } from "../../src/index.js";
import { SessionFold } from "../../src/core/session-fold.js";
import { readEvent } from "../../src/core/read-events.js";
import { CallMap } from "../../src/projections/call-map.js";
import { applyEvent, applyEventInPlace } from "../../src/projections/projection.js";
import { freezeState, sessionStateProjection, thawState } from "../../src/projections/session-state.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import type { ScriptStep } from "../../src/testing/index.js";
import { sequentialIds, steppingClock, workspace } from "../support/tools.js";

/**
 * A fold in place (a mutable `SessionFold`, `stateAt` far from a snapshot) keeps its calls in a
 * thawed map and freezes once at the end; the immutable fold keeps a persistent map and freezes
 * every state. These tests hold the two to the same states, on real recorded sessions.
 */

interface Recorded {
  name: string;
  sessionId: string;
  events: RecordedTurnlogEvent[];
  /** reference[n - 1]: the immutable fold of events 1..n, one immer draft per event. */
  reference: SessionState[];
}

/**
 * A session with every kind of event a long session has: several user messages, reads that
 * succeed and one that fails, writes held for a person (one approved, one denied), a transport
 * failure and its retry, a provider that reuses one call ID, and history compactions.
 */
async function mixedSession(): Promise<RecordedTurnlogEvent[]> {
  const ws = workspace({ "a.txt": "alpha ".repeat(60), "b.txt": "beta" });
  const steps: ScriptStep[] = [];
  for (let message = 0; message < 5; message += 1) {
    steps.push({ content: "reading", toolCalls: [{ id: "call_0", name: "read_file", arguments: '{"path":"a.txt"}' }, { name: "read_file", arguments: '{"path":"missing.txt"}' }] });
    if (message % 2 === 0) steps.push({ error: { kind: "transport", retryable: true } });
    steps.push({ toolCalls: [{ name: "write_file", arguments: JSON.stringify({ path: `out-${message}.txt`, content: "x" }) }, { name: "read_file", arguments: '{"path":"b.txt"}' }] });
    steps.push({ content: `done ${message}` });
  }
  const log = new MemoryEventLog({ clock: steppingClock(), ids: sequentialIds("event") });
  const runtime = await createRuntime({
    log,
    provider: scriptedProvider(steps),
    tools: ws.tools,
    clock: steppingClock(),
    history: { maxTokens: 700 },
    providerRetry: { baseDelayMs: 0 },
  });
  const session = await runtime.openSession("mixed");
  for (let message = 0; message < 5; message += 1) {
    let outcome = await session.send(`round ${message}`);
    for (let round = 0; outcome.status === "awaiting-approval"; round += 1) {
      for (const call of outcome.pendingApprovals) {
        if ((message + round) % 3 === 2) await session.deny(call.callId, { by: "p" });
        else await session.approve(call.callId, { by: "p" });
      }
      outcome = await session.resume();
    }
    expect(outcome.status).toBe("completed");
  }
  return [...(await runtime.events("mixed"))];
}

function withReference(name: string, events: RecordedTurnlogEvent[]): Recorded {
  const stream = events[0]?.meta.stream ?? "";
  const reference: SessionState[] = [];
  let state = sessionStateProjection.initialState();
  for (const event of events) {
    state = applyEvent(sessionStateProjection, state, event);
    reference.push(state);
  }
  return { name, sessionId: stream.slice("session-".length), events, reference };
}

/** Paths of every object reachable from `value` that is not frozen (a Map's and a Set's entries included). */
function unfrozen(value: unknown, path = "state", seen = new Set<unknown>()): string[] {
  if (typeof value !== "object" || value === null || seen.has(value)) return [];
  seen.add(value);
  const own = Object.isFrozen(value) ? [] : [path];
  if (value instanceof Map) return [...own, ...[...value].flatMap(([key, entry]) => unfrozen(entry, `${path}.get(${String(key)})`, seen))];
  if (value instanceof Set) return [...own, ...[...value].flatMap((entry, index) => unfrozen(entry, `${path}[set ${index}]`, seen))];
  return [...own, ...Object.entries(value).flatMap(([key, entry]) => unfrozen(entry, `${path}.${key}`, seen))];
}

/** Whether a state's calls are a persistent CallMap, as every immutable state's are (not a thawed one, frozen). */
const persistent = (state: SessionState) => state.calls instanceof CallMap && !state.calls.thawed;

/** The two methods `stateAt` reads, over recorded events. */
function logOf(events: RecordedTurnlogEvent[]): EventLog {
  const stream = events[0]?.meta.stream;
  return {
    streamVersion: async (name: string) => (name === stream ? events.length : 0),
    readStream: async (name: string, options: ReadStreamOptions = {}) => {
      if (name !== stream) return [];
      const from = options.from ?? 1;
      const to = Math.min(options.to ?? events.length, from + (options.maxCount ?? Infinity) - 1);
      return events.slice(from - 1, to);
    },
  } as unknown as EventLog;
}

let sessions: Recorded[];

beforeAll(async () => {
  const golden = readdirSync(new URL("../fixtures/logs/", import.meta.url)).filter((file) => file.endsWith(".json"));
  sessions = golden.map((file) => {
    const events = (JSON.parse(readFileSync(new URL(`../fixtures/logs/${file}`, import.meta.url), "utf8")) as RecordedEvent[]).map((event) => readEvent(event));
    return withReference(file, events);
  });
  sessions.push(withReference("mixed session", await mixedSession()));
});

describe("a fold in place and the immutable fold", () => {
  it("recorded sessions with failures, pauses for a person, denials, retries and compactions", () => {
    const mixed = sessions.find((session) => session.name === "mixed session")?.events ?? [];
    const types = new Set(mixed.map((event) => event.type));
    for (const type of ["turn.tool.failed", "turn.approval.granted", "turn.approval.denied", "turn.provider.failed", "session.history.compacted"]) expect(types).toContain(type);
    expect(sessions.length).toBeGreaterThan(5);
  });

  it("a mutable SessionFold holds, after every event, the state the immutable one holds, its calls frozen", () => {
    for (const { name, events, reference } of sessions) {
      const mutable = new SessionFold({ mutable: true });
      const immutable = new SessionFold();
      for (const [index, event] of events.entries()) {
        mutable.apply(event);
        immutable.apply(event);
        expect([name, index, mutable.state]).toEqual([name, index, immutable.state]);
        expect(immutable.state).toEqual(reference[index]);
        for (const call of mutable.state.calls.values()) expect(unfrozen(call)).toEqual([]);
      }
      expect([mutable.turnState, mutable.pending]).toEqual([immutable.turnState, immutable.pending]);
    }
  });

  it("thawed from any state, folded in place and frozen, gives the immutable fold's state, frozen as deeply", () => {
    for (const { name, events, reference } of sessions) {
      for (let from = 0; from < events.length; from += 3) {
        const snapshot = from === 0 ? sessionStateProjection.initialState() : (reference[from - 1] as SessionState);
        const before = JSON.stringify(snapshot, (_key, value: unknown) => (value instanceof Map || value instanceof Set ? [...value] : value));
        const working = thawState(snapshot);
        for (let to = from; to < Math.min(events.length, from + 17); to += 1) applyEventInPlace(sessionStateProjection, working, events[to] as RecordedTurnlogEvent);
        const to = Math.min(events.length, from + 17);
        const state = freezeState(working);
        expect([name, from, to, state]).toEqual([name, from, to, reference[to - 1]]);
        expect(unfrozen(state)).toEqual([]);
        expect(persistent(state)).toBe(true);
        expect(() => state.calls.clear()).toThrow(TypeError);
        // The state it was thawed from is untouched.
        expect(JSON.stringify(snapshot, (_key, value: unknown) => (value instanceof Map || value instanceof Set ? [...value] : value))).toBe(before);
      }
    }
  });

  it("freezes a changed call all the way down also when the call it replaces was not frozen (a state from elsewhere)", () => {
    for (const { name, events, reference } of sessions) {
      for (let from = 1; from < events.length; from += 5) {
        const base = reference[from - 1] as SessionState;
        // Calls in a plain Map, each an unfrozen deep copy: what a state not made by this projection may hold.
        let state: SessionState = { ...base, calls: new Map([...base.calls].map(([id, call]) => [id, structuredClone(call)])) };
        for (let to = from; to < Math.min(events.length, from + 9); to += 1) {
          state = applyEvent(sessionStateProjection, state, events[to] as RecordedTurnlogEvent);
          // Until an event changes a call, the calls stay the plain Map they were given in.
          const withCallList = (at: SessionState) => ({ ...at, calls: [...at.calls] });
          expect([name, to, withCallList(state)]).toEqual([name, to, withCallList(reference[to] as SessionState)]);
        }
        for (const call of state.calls.values()) {
          if (base.calls.get(call.callId) !== undefined && call.position > base.position) expect(unfrozen(call)).toEqual([]);
        }
      }
    }
  });

  it("stateAt cold, stateAt from a snapshot and the fold give the same frozen state at every position", async () => {
    for (const { name, sessionId, events, reference } of sessions) {
      const log = logOf(events);
      // Small snapshot intervals, so that a cold stateAt folds in place far from a snapshot.
      const warm = new SnapshotCache({ every: 2, pageSize: 3, maxSnapshots: 8 });
      await warm.stateAt(log, sessionId, events.length);
      for (let position = 1; position <= events.length; position += 1) {
        const cold = await new SnapshotCache({ every: 1, pageSize: 3 }).stateAt(log, sessionId, position);
        const fromSnapshot = await warm.stateAt(log, sessionId, position);
        expect([name, position, cold]).toEqual([name, position, reference[position - 1]]);
        expect([name, position, fromSnapshot]).toEqual([name, position, reference[position - 1]]);
        expect(unfrozen(cold)).toEqual([]);
        expect(unfrozen(fromSnapshot)).toEqual([]);
        expect(persistent(cold) && persistent(fromSnapshot)).toBe(true);
      }
    }
  });
});

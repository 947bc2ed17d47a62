import canonicalize from "canonicalize";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { canonicalJsonOf } from "../src/util/canonical-json.js";
import { computeEventHash, computeRecordedEventHash } from "../src/log/hash-chain.js";
import { eventDataSnapshot, prepareEvents, recordEvents } from "../src/log/event-recording.js";
import { StreamTimes } from "../src/log/recorded-time.js";

/** `f(value)`'s text, or "refused" when it throws: what a hash or fingerprint would get. */
function outcome(f: (value: unknown) => string | undefined, value: unknown): string | undefined {
  try {
    return f(value);
  } catch {
    return "refused";
  }
}

/** Strings that reach lone surrogates, escapes, quotes and control characters often. */
const awkwardText = fc.string({ unit: fc.oneof(fc.constantFrom("\\", "\"", "u", "d", "8", "\ud800", "\udc00", "\ud83d\ude00", "\u0000", "\u001f", "\u2028", "é"), fc.string({ minLength: 1, maxLength: 1 })) });

describe("canonicalJsonOf is the RFC 8785 text every hash, fingerprint and seal was computed over", () => {
  it("writes exactly what the canonicalize package writes, or refuses what it refuses, for any JSON value", () => {
    const value = fc.letrec((tie) => ({
      json: fc.oneof({ depthSize: "small" }, fc.constant(null), fc.boolean(), fc.double(), fc.integer(), awkwardText, fc.array(tie("json")), fc.dictionary(awkwardText, tie("json"))),
    })).json;
    fc.assert(
      fc.property(fc.oneof(value, fc.jsonValue({ stringUnit: "binary" })), (json) => {
        expect(outcome(canonicalJsonOf, json)).toBe(outcome(canonicalize, json));
      }),
      { numRuns: 3000 },
    );
  });

  it("agrees on values that are not plain JSON too: undefined, toJSON, boxed values, maps, typed arrays, sparse arrays, -0, NaN", () => {
    const withToJson = fc.anything().map((inner) => ({ toJSON: () => inner, b: 1 }));
    fc.assert(
      fc.property(
        fc.oneof(
          fc.anything({ withBoxedValues: true, withMap: true, withSet: true, withTypedArray: true, withSparseArray: true, withNullPrototype: true, withObjectString: true }),
          withToJson,
        ),
        (value) => {
          expect(outcome(canonicalJsonOf, value)).toBe(outcome(canonicalize, value));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("refuses cycles and non-finite numbers, as RFC 8785 does", () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(() => canonicalJsonOf(cyclic)).toThrow();
    expect(() => canonicalJsonOf({ n: Number.NaN })).toThrow();
    expect(() => canonicalJsonOf([Number.POSITIVE_INFINITY])).toThrow();
    expect(canonicalJsonOf({ b: [1, "x"], a: { d: null, c: true } })).toBe('{"a":{"c":true,"d":null},"b":[1,"x"]}');
  });
});

describe("an event being recorded hashes as verify() will hash it", () => {
  it("computeRecordedEventHash equals computeEventHash for any data an append accepts", () => {
    fc.assert(
      fc.property(fc.jsonValue({ stringUnit: "binary" }), awkwardText, fc.option(awkwardText, { nil: undefined }), fc.nat(), awkwardText, awkwardText, (raw, typeSuffix, causationId, position, eventId, stream) => {
        let prepared;
        try {
          [prepared] = prepareEvents([{ type: `t.${typeSuffix}`, data: raw }]);
        } catch {
          return; // refused on append: never hashed
        }
        if (prepared === undefined) return;
        const meta = {
          eventId: `e-${eventId}`,
          stream: `s${stream}`,
          streamPosition: position + 1,
          globalPosition: position + 7,
          recordedAt: "2026-01-01T00:00:00.000Z",
          schemaVersion: 1,
          ...(causationId === undefined ? {} : { causationId }),
          prevHash: "ab".repeat(32),
        };
        expect(outcome(() => computeRecordedEventHash("ab".repeat(32), prepared.type, prepared.data, meta), undefined)).toBe(
          outcome(() => computeEventHash("ab".repeat(32), { type: prepared.type, data: prepared.data, meta }), undefined),
        );
      }),
      { numRuns: 2000 },
    );
  });
});

describe("the stored form of an event is JSON.stringify of the recorded event", () => {
  it("JSON.stringify writes the same text again for what JSON.parse makes of its text", () => {
    fc.assert(
      fc.property(fc.anything({ withBoxedValues: true, withMap: true, withSet: true, withSparseArray: true, withNullPrototype: true, withObjectString: true }), (value) => {
        let text: string | undefined;
        try {
          text = JSON.stringify(value);
        } catch {
          return;
        }
        if (text === undefined) return;
        expect(JSON.stringify(JSON.parse(text))).toBe(text);
      }),
      { numRuns: 3000 },
    );
  });

  it("recordEvents stores, for data given as it is or staged as a snapshot, exactly JSON.stringify of the event it returns", () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.jsonValue(), fc.boolean(), fc.option(awkwardText, { nil: undefined })), { minLength: 1, maxLength: 4 }), (items) => {
        let prepared;
        try {
          prepared = prepareEvents(items.map(([data, staged, causationId]) => ({ type: "t.x", data: staged ? eventDataSnapshot(data, "t.x") : data, ...(causationId === undefined ? {} : { metadata: { causationId } }) })));
        } catch {
          return;
        }
        let n = 0;
        let recorded;
        try {
          recorded = recordEvents("s", { version: 0, hash: "" }, 0, prepared, new StreamTimes({ now: () => 0 }), { next: () => `id-${(n += 1)}` });
        } catch {
          return; // a causation ID with a lone surrogate: refused by the hash
        }
        recorded.events.forEach((event, index) => expect(recorded.raws[index]).toBe(JSON.stringify(event)));
      }),
      { numRuns: 1000 },
    );
  });
});

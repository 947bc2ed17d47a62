import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { describe, expect, expectTypeOf, it } from "vitest";
import { followSession, readEvent } from "../../src/index.js";
import type { LogReader, RecordedEvent, RecordedTurnlogEvent, Runtime, Session } from "../../src/index.js";

// The public surface is what the five entry points export, and docs/embedding.md ("Public
// surface") lists it: a name exported but not listed, or listed under an entry point that does
// not export it, fails here.
const root = resolve(import.meta.dirname, "../..");
const entryPoints = {
  turnlog: "src/index.ts",
  "turnlog/core": "src/core.ts",
  "turnlog/testing": "src/testing/index.ts",
  "turnlog/otel": "src/otel/index.ts",
  "turnlog/ai-sdk": "src/ai-sdk.ts",
} as const;

function exportedNames(file: string): string[] {
  const text = readFileSync(resolve(root, file), "utf8");
  return [...text.matchAll(/export\s+(?:type\s+)?\{([^}]*)\}\s*from/g)].flatMap((match) =>
    (match[1] as string)
      .split(",")
      .map((name) => name.trim().replace(/^type\s+/, "").split(/\s+as\s+/).at(-1) as string)
      .filter((name) => name !== ""),
  );
}

/** The names the doc lists under each entry point's heading, as written in backticks. */
function documentedNames(): Map<string, Set<string>> {
  const doc = readFileSync(resolve(root, "docs/embedding.md"), "utf8");
  const section = doc.slice(doc.indexOf("## Public surface"));
  const body = section.slice(0, section.indexOf("\n## ", 1));
  const byEntry = new Map<string, Set<string>>();
  for (const part of body.split(/\*\*`import … from "/).slice(1)) {
    const entry = part.slice(0, part.indexOf('"'));
    byEntry.set(entry, new Set([...part.slice(part.indexOf("\n")).matchAll(/`([A-Za-z_$][\w$]*)`/g)].map((match) => match[1] as string)));
  }
  return byEntry;
}

describe("the public surface", () => {
  const documented = documentedNames();

  it("docs/embedding.md lists every entry point", () => {
    expect([...documented.keys()].sort()).toEqual(Object.keys(entryPoints).sort());
  });

  for (const [entry, file] of Object.entries(entryPoints)) {
    it(`lists exactly what ${entry} exports`, () => {
      const exported = new Set(exportedNames(file));
      const listed = documented.get(entry) ?? new Set<string>();
      expect([...exported].filter((name) => !listed.has(name))).toEqual([]);
      expect([...listed].filter((name) => !exported.has(name))).toEqual([]);
    });
  }

  it("package.json publishes the five entry points", () => {
    const manifest = JSON.parse(readFileSync(resolve(root, "package.json"), "utf8")) as { exports: Record<string, unknown> };
    expect(Object.keys(manifest.exports)).toEqual(expect.arrayContaining([".", "./core", "./testing", "./otel", "./ai-sdk"]));
  });
});

// Events reach a host typed: every way to read a session's events hands out the union of the
// catalogue (`RecordedTurnlogEvent`), parsed through the parse layer, so a `switch (event.type)`
// narrows `event.data` with no cast. Only the log's own, any-stream reads (`log.readStream`,
// `followStream`, `log.subscribe`) stay `RecordedEvent`, whose data is `unknown` until `readEvent`.
describe("the public surface hands out typed events", () => {
  it("runtime.events, session.events, the reader's events and view, and followSession give RecordedTurnlogEvent", () => {
    expectTypeOf<Awaited<ReturnType<Runtime["events"]>>>().toEqualTypeOf<RecordedTurnlogEvent[]>();
    expectTypeOf<ReturnType<Session["events"]>>().toEqualTypeOf<AsyncIterableIterator<RecordedTurnlogEvent>>();
    expectTypeOf<Awaited<ReturnType<LogReader["events"]>>>().toEqualTypeOf<RecordedTurnlogEvent[]>();
    expectTypeOf<Awaited<ReturnType<LogReader["view"]>>["events"]>().toEqualTypeOf<RecordedTurnlogEvent[]>();
    expectTypeOf(followSession).returns.toEqualTypeOf<AsyncIterableIterator<RecordedTurnlogEvent>>();
    expectTypeOf(readEvent).returns.toEqualTypeOf<RecordedTurnlogEvent>();
    expectTypeOf<RecordedEvent["data"]>().toBeUnknown();
  });

  it("a switch on event.type narrows event.data with no cast", () => {
    const describeEvent = (event: RecordedTurnlogEvent): string => {
      switch (event.type) {
        case "turn.completed":
          expectTypeOf(event.data.text).toEqualTypeOf<string>();
          return event.data.text;
        case "turn.tool.succeeded":
          expectTypeOf(event.data.callId).toEqualTypeOf<string>();
          return event.data.callId;
        case "turn.approval.granted":
          expectTypeOf(event.data.by).toEqualTypeOf<string>();
          return event.data.by;
        default:
          expectTypeOf(event).not.toEqualTypeOf<never>();
          return event.type;
      }
    };
    const completed = { type: "turn.completed", data: { turnId: "t1", text: "Done." }, meta: { eventId: "e1", stream: "session-s1", streamPosition: 5, globalPosition: 5, recordedAt: "2026-01-01T00:00:00.000Z", schemaVersion: 1, prevHash: "", hash: "" } } as const;
    expect(describeEvent(readEvent(completed))).toBe("Done.");
  });
});

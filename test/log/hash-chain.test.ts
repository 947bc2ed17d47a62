import { describe, expect, it } from "vitest";
import type { RecordedEvent } from "../../src/log/event-log.js";
import { computeEventHash, verifyChain } from "../../src/log/hash-chain.js";
import type { StoredChainEntry } from "../../src/log/hash-chain.js";
import { MemoryEventLog } from "../../src/log/memory-event-log.js";
import { counterIds, steppingClock } from "./event-log.conformance.js";

/** The stored JSON of a three-event stream "s1", as a backend would hold it. */
async function storedChain(): Promise<{ raws: string[]; events: RecordedEvent[] }> {
  const log = new MemoryEventLog({ clock: steppingClock(), ids: counterIds() });
  await log.appendToStream("s1", [
    { type: "session.opened", data: { title: "hello" } },
    { type: "turn.started", data: { text: "ünïcode ✓", n: 1.5, ok: true, none: null } },
    { type: "turn.completed", data: { list: [1, 2, 3] } },
  ]);
  const events = await log.readStream("s1");
  return { raws: events.map((event) => JSON.stringify(event)), events };
}

function entries(raws: readonly (string | undefined)[]): StoredChainEntry[] {
  return raws.map((raw, index) => ({ position: index + 1, raw }));
}

function headOf(events: readonly RecordedEvent[]) {
  return { version: events.length, hash: events[events.length - 1]?.meta.hash ?? "" };
}

describe("computeEventHash", () => {
  const meta = {
    eventId: "evt-1",
    stream: "s1",
    streamPosition: 1,
    globalPosition: 1,
    recordedAt: "2025-01-01T00:00:00.000Z",
    schemaVersion: 1,
    prevHash: "",
  };

  it("does not depend on key order, only on content", () => {
    const reordered = {
      meta: Object.fromEntries(Object.entries(meta).reverse()) as typeof meta,
      data: { b: [1, { y: 2, x: 1 }], a: "z" },
      type: "t.happened",
    };
    expect(computeEventHash("", { type: "t.happened", data: { a: "z", b: [1, { x: 1, y: 2 }] }, meta })).toBe(
      computeEventHash("", reordered),
    );
  });

  it("ignores a hash already present in meta, and changes with prevHash or any field", () => {
    const base = computeEventHash("", { type: "t", data: {}, meta });
    expect(computeEventHash("", { type: "t", data: {}, meta: { ...meta, hash: "whatever" } })).toBe(base);
    expect(computeEventHash("abc", { type: "t", data: {}, meta })).not.toBe(base);
    expect(computeEventHash("", { type: "t", data: { a: 1 }, meta })).not.toBe(base);
    expect(computeEventHash("", { type: "t", data: {}, meta: { ...meta, globalPosition: 2 } })).not.toBe(base);
  });
});

describe("verifyChain", () => {
  it("accepts an intact chain and counts its events", async () => {
    const { raws, events } = await storedChain();
    expect(verifyChain("s1", entries(raws), headOf(events))).toEqual({ ok: true, checked: 3 });
    expect(verifyChain("s1", [])).toEqual({ ok: true, checked: 0 });
  });

  it("reports each kind of damage at the first bad position", async () => {
    const { raws, events } = await storedChain();
    const head = headOf(events);
    const [first, second, third] = raws as [string, string, string];
    const cases: Array<[string, StoredChainEntry[], number, string]> = [
      ["edited value", entries([first, second.replace("1.5", "2.5"), third]), 2, "hash-mismatch"],
      ["unreadable JSON", entries([first, second.slice(0, -1), third]), 2, "unreadable"],
      ["index points at nothing", entries([first, undefined, third]), 2, "missing"],
      ["gap in the index", [entries([first])[0]!, { position: 3, raw: third }], 2, "position-gap"],
      ["reordered pair", entries([first, third, second]), 2, "out-of-order"],
      ["removed first event", entries([second, third]), 1, "out-of-order"],
      ["removed last event", entries([first, second]), 3, "head-mismatch"],
      ["event of another stream", entries([first, second.replace('"stream":"s1"', '"stream":"s2"'), third]), 2, "wrong-stream"],
      ["not an event", entries([first, "[1,2]", third]), 2, "malformed"],
      [
        "prevHash rewritten",
        entries([first, second.replace(events[0]!.meta.hash, "0".repeat(64)), third]),
        2,
        "prev-hash-mismatch",
      ],
    ];
    for (const [name, damaged, position, kind] of cases) {
      const result = verifyChain("s1", damaged, head);
      expect(result, name).toMatchObject({ ok: false, firstBadPosition: position, kind, checked: position - 1 });
      expect(result.ok === false && result.reason.startsWith(`${kind}: `), name).toBe(true);
    }
  });

  it("reports a head that claims fewer events, or another hash", async () => {
    const { raws, events } = await storedChain();
    expect(verifyChain("s1", entries(raws), { version: 2, hash: events[1]!.meta.hash })).toMatchObject({
      ok: false,
      firstBadPosition: 3,
      kind: "head-mismatch",
    });
    expect(verifyChain("s1", entries(raws), { version: 3, hash: "f".repeat(64) })).toMatchObject({
      ok: false,
      firstBadPosition: 3,
      kind: "head-mismatch",
    });
  });

  it("catches every single-bit flip of every byte of a stored event, at that event", async () => {
    const { raws, events } = await storedChain();
    const head = headOf(events);
    const bytes = Buffer.from(raws[1]!, "utf8");
    for (let offset = 0; offset < bytes.length; offset += 1) {
      for (let bit = 0; bit < 8; bit += 1) {
        const flipped = Buffer.from(bytes);
        flipped[offset] = (flipped[offset] ?? 0) ^ (1 << bit);
        const result = verifyChain("s1", entries([raws[0], flipped.toString("utf8"), raws[2]]), head);
        expect(result.ok === false && result.firstBadPosition, `byte ${offset}, bit ${bit}`).toBe(2);
      }
    }
  });
});

import { describe, expect, it } from "vitest";
import { MemoryEventLog } from "../../src/index.js";
import { eventDataSnapshot } from "../../src/log/event-recording.js";

const fixedClock = { now: () => Date.parse("2026-01-01T00:00:00.000Z") };
const ids = () => {
  let n = 0;
  return { next: () => `id-${(n += 1)}` };
};

describe("event data staged ahead of an append (eventDataSnapshot)", () => {
  it("is what the append stores, and appending it records the same event and hash as appending the original", async () => {
    const original = { b: [1, undefined, "x"], a: { keep: true, drop: undefined }, n: 1.5 };
    const snapshot = eventDataSnapshot(original, "x.happened");
    expect(snapshot).toEqual({ b: [1, null, "x"], a: { keep: true }, n: 1.5 });
    expect(Object.isFrozen(snapshot)).toBe(true);
    expect(Object.isFrozen((snapshot as { a: object }).a)).toBe(true);

    const fromOriginal = new MemoryEventLog({ clock: fixedClock, ids: ids() });
    const fromSnapshot = new MemoryEventLog({ clock: fixedClock, ids: ids() });
    const [left] = (await fromOriginal.appendToStream("s", [{ type: "x.happened", data: original }])).events;
    const [right] = (await fromSnapshot.appendToStream("s", [{ type: "x.happened", data: snapshot }])).events;
    expect(right).toEqual(left);
    expect(await fromSnapshot.verify()).toEqual({ ok: true, checked: 1 });
  });

  it("later changes to the original do not reach what is stored", async () => {
    const original = { list: [1, 2] };
    const snapshot = eventDataSnapshot(original, "x.happened");
    original.list.push(3);
    const log = new MemoryEventLog();
    await log.appendToStream("s", [{ type: "x.happened", data: snapshot }]);
    expect((await log.readStream("s"))[0]?.data).toEqual({ list: [1, 2] });
  });

  it("refuses what an append refuses, with the same kind of error", () => {
    expect(() => eventDataSnapshot({ text: "\ud800" }, "x.happened")).toThrow(TypeError);
    expect(() => eventDataSnapshot({ big: 1n }, "x.happened")).toThrow(TypeError);
    expect(() => eventDataSnapshot(undefined, "x.happened")).toThrow(TypeError);
  });
});

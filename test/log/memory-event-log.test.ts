import { describe, expect, it } from "vitest";
import { MemoryEventLog } from "../../src/log/memory-event-log.js";
import { runEventLogConformance, someEvents } from "./event-log.conformance.js";

runEventLogConformance("MemoryEventLog", async (options) => {
  const log = new MemoryEventLog(options);
  return { log, dispose: () => log.close() };
});

describe("MemoryEventLog.verify", () => {
  async function logWithFive(): Promise<MemoryEventLog> {
    const log = new MemoryEventLog();
    await log.appendToStream("other", someEvents(2));
    await log.appendToStream("s1", someEvents(5));
    return log;
  }

  it("names the first bad position of an event whose data was edited", async () => {
    const log = await logWithFive();
    log.unsafeTamper(({ events }) => {
      // Global position 5 is stream position 3 of s1.
      events[4] = events[4]!.replace('"index":2', '"index":7');
    });
    expect(await log.verify()).toMatchObject({ ok: false, stream: "s1", firstBadPosition: 3, checked: 4 });
    expect((await log.verify()).reason).toMatch(/^hash-mismatch/);
  });

  it("names the position of a removed event, in the middle or at the end", async () => {
    const middle = await logWithFive();
    middle.unsafeTamper(({ streamIndex }) => streamIndex.get("s1")!.splice(1, 1));
    expect(await middle.verify({ stream: "s1" })).toMatchObject({ ok: false, firstBadPosition: 2 });

    const last = await logWithFive();
    last.unsafeTamper(({ streamIndex }) => streamIndex.get("s1")!.pop());
    expect(await last.verify({ stream: "s1" })).toMatchObject({ ok: false, firstBadPosition: 5 });
    expect((await last.verify({ stream: "s1" })).reason).toMatch(/^head-mismatch/);
  });

  it("names the first position of two swapped events", async () => {
    const log = await logWithFive();
    log.unsafeTamper(({ streamIndex }) => {
      const index = streamIndex.get("s1")!;
      [index[2], index[3]] = [index[3]!, index[2]!];
    });
    expect(await log.verify()).toMatchObject({ ok: false, stream: "s1", firstBadPosition: 3 });
  });

  it("reports unreadable JSON at its position instead of throwing", async () => {
    const log = await logWithFive();
    log.unsafeTamper(({ events }) => {
      events[2] = events[2]!.slice(0, 20);
    });
    const report = await log.verify();
    expect(report).toMatchObject({ ok: false, stream: "s1", firstBadPosition: 1 });
    expect(report.reason).toMatch(/^unreadable/);
  });
});

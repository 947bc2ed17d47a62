import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { packetize, truncate, type CallForPacket } from "../../src/tools/packetizer.js";

const call = (extra: Partial<CallForPacket>): CallForPacket => ({ callId: "c1", tool: "read_file", maxResultChars: 12_000, ...extra });

describe("packetizer", () => {
  it("passes a result through whole when it fits", () => {
    expect(packetize([call({ result: { kind: "succeeded", output: "hello" } })])).toEqual([
      { callId: "c1", tool: "read_file", ok: true, content: "hello", truncated: false, originalChars: 5 },
    ]);
  });

  it("keeps head and tail of a long result, with a marker stating how many characters were removed", () => {
    const output = `${"a".repeat(5000)}${"b".repeat(5000)}`;
    const [packet] = packetize([call({ maxResultChars: 1000, result: { kind: "succeeded", output } })]);
    expect(packet?.truncated).toBe(true);
    expect(packet?.originalChars).toBe(10_000);
    expect(packet?.content.length).toBeLessThanOrEqual(1000);
    expect(packet?.content.startsWith("aaa")).toBe(true);
    expect(packet?.content.endsWith("bbb")).toBe(true);
    const removed = Number(/…\[(\d+) characters removed\]…/.exec(packet?.content ?? "")?.[1]);
    const kept = (packet?.content.length ?? 0) - (packet?.content.match(/\n…\[\d+ characters removed\]…\n/)?.[0].length ?? 0);
    expect(removed + kept).toBe(10_000);
  });

  it("truncates only when characters are actually removed, and never exceeds the cap", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), fc.integer({ min: 1, max: 300 }), (text, max) => {
        const result = truncate(text, max);
        expect(result.content.length).toBeLessThanOrEqual(Math.max(max, 0));
        expect(result.truncated).toBe(text.length > max);
        if (!result.truncated) expect(result.content).toBe(text);
        expect(result.originalChars).toBe(text.length);
      }),
    );
  });

  it("gives every call that did not run an ok:false packet with a distinct code and words the model can act on", () => {
    const packets = packetize([
      call({ callId: "r1", rejection: { reason: "schema-invalid", issues: [{ path: "path", message: "expected string" }] } }),
      call({ callId: "r2", rejection: { reason: "unknown-tool", issues: [{ path: "", message: 'there is no tool named "x"' }] } }),
      call({ callId: "r3", rejection: { reason: "over-budget" } }),
      call({ callId: "b", decision: "block" }),
      call({ callId: "d", decision: "deny" }),
      call({ callId: "u", decision: "ask", approval: { granted: false, note: "not today" } }),
      call({ callId: "f", decision: "allow", result: { kind: "failed", code: "timeout", message: "did not finish within 100 ms" } }),
      call({ callId: "i", decision: "allow", result: { kind: "interrupted" } }),
    ]);
    expect(packets.map((packet) => packet.callId)).toEqual(["r1", "r2", "r3", "b", "d", "u", "f", "i"]);
    expect(packets.every((packet) => packet.ok === false)).toBe(true);
    const codes = packets.map((packet) => packet.errorCode);
    expect(new Set(codes).size).toBe(codes.length);
    expect(packets[0]?.content).toBe("Error: not run: arguments did not match the schema: path: expected string");
    expect(packets[2]?.content).toContain("budget");
    expect(packets[3]?.content).toContain("blocks this call");
    expect(packets[5]?.content).toBe("Error: not run: the user denied this call. Their reason: not today");
    expect(packets[6]?.content).toBe("Error (timeout): did not finish within 100 ms");
    // Rule names stay out of what the model sees.
    for (const packet of packets) expect(packet.content).not.toMatch(/hard-block|mode:|deny:|allow:/);
  });
});

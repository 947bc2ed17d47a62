import { describe, expect, it } from "vitest";
import { z } from "zod";
import { realisticAnswer, realisticPrompt, realisticScript, realisticTools } from "../../bench/realistic-workload.js";
import { createRuntime, defineTool } from "../../src/index.js";
import { findSecrets } from "../../src/policy/secrets/secret-detector.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";

// The realistic-calls scenario (bench/realistic.ts, docs/performance.md#the-scenarios) measures what
// it says: seeded and repeatable, arguments of about 80 characters, varied outputs of a few hundred
// to a few thousand characters, reads and a write per turn, all run unasked in full-auto and logged
// whole. No timing here.

describe("the realistic-calls workload", () => {
  const script = realisticScript(200);
  const calls = script.flat();

  it("is the same script for the same seed, and another for another seed", () => {
    expect(realisticScript(200)).toEqual(script);
    expect(realisticScript(20, 36)).not.toEqual(script.slice(0, 20));
  });

  it("has arguments of about 80 characters and outputs of a few hundred to a few thousand, of varied text", () => {
    const argumentLengths = calls.map((call) => call.arguments.length);
    const mean = argumentLengths.reduce((sum, length) => sum + length, 0) / calls.length;
    expect(mean).toBeGreaterThan(70);
    expect(mean).toBeLessThan(90);
    for (const call of calls) {
      expect(() => JSON.parse(call.arguments)).not.toThrow();
      expect(call.output.length).toBeGreaterThanOrEqual(300);
      expect(call.output.length).toBeLessThan(6000);
    }
    expect(calls.some((call) => call.output.length > 2000)).toBe(true);
    // Varied text: nearly every output is distinct, and each has many distinct lines.
    expect(new Set(calls.map((call) => call.output)).size).toBe(calls.length);
    // Scanned and found clean, as most tool output is: the scenario measures the scan, not a redaction.
    expect(calls.flatMap((call) => [...findSecrets(call.arguments), ...findSecrets(call.output)])).toEqual([]);
    for (const call of calls) {
      const lines = call.output.split("\n");
      expect(new Set(lines).size).toBeGreaterThan(lines.length / 2);
    }
  });

  it("mixes reads and a write in each turn, and turnlog runs them all unasked in full-auto, logging each output whole", async () => {
    for (const turn of script) expect(turn.map((call) => call.tool).sort()).toEqual(["read_file", "read_file", "search_code", "write_file"]);

    const turns = script.slice(0, 3);
    const outputs = new Map(turns.flat().map((call) => [call.id, call.output]));
    const ran: string[] = [];
    const tools = realisticTools.map((spec) =>
      defineTool({
        name: spec.name,
        description: spec.description,
        risk: spec.readOnly ? "read-only-local" : "workspace-write",
        input: z.looseObject({}),
        run: (_input, ctx) => {
          ran.push(ctx.callId);
          return outputs.get(ctx.callId) ?? "";
        },
      }),
    );
    const runtime = await createRuntime({
      log: new MemoryEventLog(),
      provider: scriptedProvider([...turns.map((calls) => ({ toolCalls: calls.map((call) => ({ id: call.id, name: call.tool, arguments: call.arguments })) })), { content: realisticAnswer }]),
      tools,
      policy: { approvalMode: "full-auto", workspace: { root: "/workspace", trusted: true } },
    });
    const session = await runtime.openSession("realistic");
    const outcome = await session.send(realisticPrompt);
    expect(outcome).toMatchObject({ status: "completed", text: realisticAnswer });
    expect(ran.sort()).toEqual([...outputs.keys()].sort());

    const events = await runtime.events("realistic");
    const succeeded = events.filter((event) => event.type === "turn.tool.succeeded").map((event) => event.data as { callId: string; output: string; stored?: unknown; redacted?: boolean });
    expect(succeeded.map((data) => [data.callId, data.output])).toEqual(turns.flat().map((call) => [call.id, call.output]));
    expect(succeeded.every((data) => data.stored === undefined && data.redacted === undefined)).toBe(true);
    const gated = events.filter((event) => event.type === "turn.tool_calls.gated").flatMap((event) => (event.data as { decisions: { decision: string }[] }).decisions);
    expect(gated.map((decision) => decision.decision)).toEqual(turns.flat().map(() => "allow"));
    await runtime.close();
  });
});

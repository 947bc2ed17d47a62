import { describe, expect, it } from "vitest";
import { createRuntime } from "../../src/index.js";
import { ToolRegistry } from "../../src/tools/tool-registry.js";
import { SessionSync } from "../../src/runtime/session-sync.js";
import { MemoryEventLog, scriptedProvider } from "../../src/testing/index.js";
import { workspace } from "../support/tools.js";

/* SessionSync: what a session owes its log before a decision when the runtime's tools change. */

describe("SessionSync", () => {
  it("a tool set that changes while the owed events are being appended is still owed afterwards", async () => {
    const { readFile, writeFile } = workspace();
    const runtime = await createRuntime({ log: new MemoryEventLog(), provider: scriptedProvider([]), tools: [readFile] });
    const session = await runtime.openSession("sync");
    const registry = new ToolRegistry([readFile]);
    const sync = new SessionSync(registry, undefined);
    // The session as the decider sees it: between turns, nothing owed.
    const between = () => ({ state: session.state(), pending: [], turnState: undefined, turnContext: undefined });
    // The log already holds [read_file]: nothing owed, and that comparison is marked as synced.
    expect(sync.owed(between(), true)).toEqual([]);
    sync.synced();
    expect(sync.owed(between(), true)).toEqual([]);

    // Compared, then the registry changes before `synced()` (an MCP re-list landing mid-append).
    sync.owed(between(), true);
    registry.register(writeFile);
    sync.synced();
    const owed = sync.owed(between(), true);
    expect(owed.map((event) => event.type)).toEqual(["session.tools.changed"]);
    expect((owed[0]?.data as { tools: { name: string }[] }).tools.map((tool) => tool.name)).toEqual(["read_file", "write_file"]);
    await runtime.close();
  });
});

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { createRuntime, defineTool, LevelEventLog, MemoryEventLog } from "../../../src/index.js";
import type { EventLog, Provider, RecordedEvent, RuntimeOptions, SendOutcome } from "../../../src/index.js";

/** A distinctive fake key: if it shows up anywhere it must not, a test can find it. */
export const fakeKey = `sk-test-${"Zq9Xw2Lk7Pm4Rt6Yv8Bn".repeat(2)}`;

/** Two small read-only tools and a record of every call they ran. */
export function lookupTools() {
  const ran: string[] = [];
  const facts = new Map([
    ["alpha", "the first letter"],
    ["beta", "the second letter"],
  ]);
  const lookup = defineTool({
    name: "lookup",
    description: "Look a word up",
    risk: "read-only-local",
    input: z.object({ word: z.string() }),
    run: ({ word }) => {
      ran.push(`lookup ${word}`);
      return facts.get(word) ?? `no entry for ${word}`;
    },
  });
  const listWords = defineTool({
    name: "list_words",
    description: "List the words there are entries for",
    risk: "read-only-local",
    input: z.object({ prefix: z.string().optional() }),
    run: ({ prefix }) => {
      ran.push(`list_words ${prefix ?? ""}`.trim());
      return [...facts.keys()].filter((word) => word.startsWith(prefix ?? "")).join("\n");
    },
  });
  return { ran, tools: [lookup, listWords] };
}

/** The recorded events of one type. */
export function eventsOf<T extends string>(events: readonly RecordedEvent[], type: T): (RecordedEvent & { type: T; data: Record<string, unknown> })[] {
  return events.filter((event) => event.type === type) as (RecordedEvent & { type: T; data: Record<string, unknown> })[];
}

/** Runs one `send` of a whole session through a real provider, with tiny retry delays. */
export async function runSession(
  provider: Provider,
  text: string,
  options: { log?: EventLog; signal?: AbortSignal; onDelta?: (text: string) => void; runtime?: Partial<RuntimeOptions> } = {},
) {
  const { ran, tools } = lookupTools();
  const runtime = await createRuntime({
    log: options.log ?? new MemoryEventLog(),
    provider,
    tools,
    providerRetry: { baseDelayMs: 1, maxDelayMs: 20 },
    ...(options.onDelta ? { onDelta: options.onDelta } : {}),
    ...options.runtime,
  });
  const session = await runtime.openSession("s1");
  const outcome: SendOutcome = await session.send(text, options.signal ? { signal: options.signal } : {});
  const events = await runtime.events("s1");
  return { runtime, session, outcome, events, ran };
}

/** A LevelEventLog in a fresh temporary directory, and how to remove it. */
export async function temporaryLevelLog(): Promise<{ log: LevelEventLog; remove: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), "turnlog-provider-"));
  const log = await LevelEventLog.open(dir, { durability: "sync" });
  return {
    log,
    remove: async () => {
      await log.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

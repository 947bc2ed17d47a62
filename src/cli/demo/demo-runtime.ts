import { z } from "zod";
import type { Budgets } from "../../contracts/budgets.js";
import type { PolicyInput } from "../../contracts/policy.js";
import type { EventOf } from "../../contracts/events.js";
import type { Clock, EventLog, RecordedTurnlogEvent } from "../../log/event-log.js";
import { scriptedProvider, type ScriptedProvider } from "../../providers/scripted-provider.js";
import { createRuntime, type Runtime } from "../../runtime/create-runtime.js";
import type { SealOptions } from "../../log/seal/stream-sealer.js";
import { defineTool, type ToolDefinition } from "../../tools/define-tool.js";
import { ToolRegistry } from "../../tools/tool-registry.js";
import { plural } from "../timeline.js";
import { demoScript } from "./demo-script.js";
import { VirtualWorkspace } from "./virtual-workspace.js";

/** The files the demo's in-memory workspace starts with. */
export const demoFiles: Readonly<Record<string, string>> = {
  "README.md": "# demo-project\n\nA tiny project that lives only in memory, for `turnlog demo`.\n",
  "notes.md": [
    "# Project notes",
    "",
    "- The event log is the source of truth: session state, audit and history are projections of it.",
    "- Every tool decision is recorded together with the rule that made it.",
    "- In `ask` mode, reads run at once and writes wait for a person's approval.",
    "- Replay recomputes each decision from the log, so a behaviour change fails CI.",
    "",
  ].join("\n"),
  "todo.md": "- [ ] run `turnlog replay` in CI\n- [ ] try a real provider\n",
  // A deploy that never finishes: the model watching it runs into the iteration budget.
  "deploy.log": [
    "12:00:01 deploy #4 of demo-project started",
    "12:00:07 image built",
    "12:00:31 rolling out: waiting for health checks…",
    "",
  ].join("\n"),
};

/** The workspace root the demo's policy records: a virtual one, since no real file is touched. */
export const demoWorkspaceRoot = "/virtual-workspace";

/** The provider ID the demo records in `session.started`; `approve`, `deny` and `resume` look for it. */
export const demoProviderId = "scripted-demo";

/** The demo's policy: `ask` mode, so reads run at once and writes and commands wait for a person. */
export const demoPolicy: PolicyInput = { approvalMode: "ask", workspace: { root: demoWorkspaceRoot, trusted: false } };

/**
 * The demo's budgets: four provider iterations per user message, so the second message (a model
 * watching a deploy that never finishes) is stopped by the runtime. The wall clock is a day rather
 * than five minutes because it counts from the user message, and `demo --pause` leaves a turn
 * waiting for a person who may take longer than that to answer.
 */
export const demoBudgets: Partial<Budgets> = { maxIterations: 4, wallClockMs: 24 * 60 * 60 * 1000 };

/**
 * The demo's built-in tools, working on an in-memory {@link VirtualWorkspace} so that the demo
 * never reads or writes the user's real files: `read_file({ path })` and `list_dir({ path })`
 * (read-only-local), `run_command({ command })` (external-side-effect, a simulated shell) and
 * `write_file({ path, content })` (workspace-write). The CLI's `replay` also uses them: replay
 * needs the tool definitions a session was recorded with, and the CLI has no host code to take
 * them from.
 *
 * @example
 * const runtime = await createRuntime({ log, provider, tools: demoTools() });
 */
export function demoTools(workspace: VirtualWorkspace = new VirtualWorkspace(demoFiles)): ToolDefinition[] {
  const outside = (file: string) => ({ ok: false, content: `"${file}" is outside the workspace` });
  return [
    defineTool({
      name: "read_file",
      description: "Read a UTF-8 text file in the workspace.",
      risk: "read-only-local",
      input: z.object({ path: z.string().describe("workspace-relative path") }),
      paths: ({ path }) => [path],
      idempotent: true,
      run: ({ path }) => {
        if (VirtualWorkspace.normalize(path) === undefined) return outside(path);
        return workspace.read(path) ?? { ok: false, content: `no such file: ${path}` };
      },
    }),
    defineTool({
      name: "list_dir",
      description: "List the entries of a directory in the workspace (folders end with /).",
      risk: "read-only-local",
      input: z.object({ path: z.string().describe("workspace-relative directory, . for the root") }),
      paths: ({ path }) => [path],
      idempotent: true,
      run: ({ path }) => {
        if (VirtualWorkspace.normalize(path) === undefined) return outside(path);
        const entries = workspace.list(path);
        return entries === undefined ? { ok: false, content: `no such directory: ${path}` } : entries.join("\n");
      },
    }),
    defineTool({
      name: "run_command",
      description: "Run a shell command in the workspace. In the demo the shell is simulated: nothing is executed.",
      risk: "external-side-effect",
      input: z.object({ command: z.string().describe("the shell command line") }),
      command: ({ command }) => command,
      run: ({ command }) => (command.includes("status.example.com") ? demoStatusOutput : `(simulated shell: "${command.split(" ")[0] ?? ""}" was not executed)`),
    }),
    defineTool({
      name: "write_file",
      description: "Create or overwrite a UTF-8 text file in the workspace.",
      risk: "workspace-write",
      input: z.object({ path: z.string().describe("workspace-relative path"), content: z.string() }),
      paths: ({ path }) => [path],
      run: ({ path, content }) => {
        if (!workspace.write(path, content)) return outside(path);
        return `wrote ${plural(content.length, "character")} to ${path}`;
      },
    }),
  ];
}

/** What the demo's simulated shell answers for the status check. */
const demoStatusOutput = JSON.stringify({ service: "demo-project", status: "green", deploys_today: 3 });

/** Options of {@link createDemoRuntime}. */
export interface DemoRuntimeOptions {
  log: EventLog;
  /** Default: the whole {@link demoScript}. */
  provider?: ScriptedProvider;
  /** Default: a fresh one holding {@link demoFiles}. */
  workspace?: VirtualWorkspace;
  clock?: Clock;
  /** The key and witness the demo's sessions are sealed with (the CLI passes the user's). */
  seals?: SealOptions;
}

/**
 * The runtime every demo command builds — `demo` records with it, `approve`, `deny` and `resume`
 * continue with it — so that all of them agree on the tools, the policy, the budgets and the
 * provider ID that a demo session records.
 *
 * @example
 * const runtime = await createDemoRuntime({ log });
 * const outcome = await (await runtime.openSession("d1")).send(demoQuestion);
 */
export function createDemoRuntime(options: DemoRuntimeOptions): Promise<Runtime> {
  return createRuntime({
    log: options.log,
    provider: options.provider ?? scriptedProvider(demoScript(), { id: demoProviderId }),
    tools: demoTools(options.workspace ?? new VirtualWorkspace(demoFiles)),
    policy: demoPolicy,
    budgets: demoBudgets,
    ...(options.clock !== undefined ? { clock: options.clock } : {}),
    ...(options.seals !== undefined ? { seals: options.seals } : {}),
  });
}

/**
 * How many answers of the demo script a session has used: every provider response, and every
 * failed attempt the provider itself reported. An `interrupted` failure is written by recovery
 * (the process died before the provider answered), so it used no answer.
 *
 * @example
 * scriptedProvider(demoScript().slice(consumedScriptSteps(events)), { id: demoProviderId });
 */
export function consumedScriptSteps(events: readonly RecordedTurnlogEvent[]): number {
  return events.filter(
    (event) => event.type === "turn.provider.responded" || (event.type === "turn.provider.failed" && event.data.kind !== "interrupted"),
  ).length;
}

/**
 * A scripted provider that continues the demo script where `events` left it, so a later process
 * can resume a session that `turnlog demo --pause` recorded.
 *
 * @example
 * const runtime = await createDemoRuntime({ log, provider: continuedDemoProvider(recordedEvents) });
 */
export function continuedDemoProvider(events: readonly RecordedTurnlogEvent[]): ScriptedProvider {
  return scriptedProvider(demoScript().slice(consumedScriptSteps(events)), { id: demoProviderId });
}

/**
 * Names of the tools a session recorded that the demo lacks or defines with another input schema
 * (none when its `session.started` lists no tools).
 *
 * @example
 * toolsForeignToDemo(events); // ["search_web"]
 */
export function toolsForeignToDemo(events: readonly RecordedTurnlogEvent[]): string[] {
  const known = new Map(new ToolRegistry(demoTools()).snapshot().map((tool) => [tool.name, tool.schemaDigest]));
  const recorded = startedData(events)?.tools ?? [];
  return recorded.filter((tool) => known.get(tool.name) !== tool.schemaDigest).map((tool) => tool.name);
}

/**
 * Why a session is not one the demo recorded — another provider, or tools the demo does not
 * define — or `undefined` when it is one.
 *
 * @example
 * notADemoSession(events); // 'its provider is "scripted", not "scripted-demo"'
 */
export function notADemoSession(events: readonly RecordedTurnlogEvent[]): string | undefined {
  const providerId = startedData(events)?.provider?.id;
  if (providerId !== demoProviderId) return `its provider is ${typeof providerId === "string" ? `"${providerId}"` : "unknown"}, not "${demoProviderId}"`;
  const foreign = toolsForeignToDemo(events);
  if (foreign.length > 0) return `it has tools the demo does not define: ${foreign.join(", ")}`;
  return undefined;
}

function startedData(events: readonly RecordedTurnlogEvent[]): EventOf<"session.started">["data"] | undefined {
  for (const event of events) if (event.type === "session.started") return event.data;
  return undefined;
}

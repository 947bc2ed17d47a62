import type { ResolvedLogLocation } from "../../log/log-location.js";
import { terminalSafe } from "../terminal-text.js";
import { readFile } from "node:fs/promises";
import { PolicySnapshotSchema, type PolicyInput } from "../../contracts/policy.js";
import {
  createLogReader,
  formatDecisionChange,
  isKnownDecisionsVersion,
  latestDecisionsVersion,
  resolveDecisionsVersion,
  type Divergence,
  type ReplayReport,
  type SessionState,
} from "../../reader/index.js";
import { demoTools, toolsForeignToDemo } from "../demo/demo-runtime.js";
import type { RecordedTurnlogEvent } from "../../log/event-log.js";
import { changedToolsMessage } from "../open-recorded-session.js";
import { findRunRecord, type RunRecord } from "../run/run-record.js";
import { runReplayRegistry, toolSetDifferences } from "../run/run-runtime.js";
import { ToolRegistry } from "../../tools/tool-registry.js";
import { matchesRecorded } from "../../tools/recorded-tool.js";
import { workspaceTools } from "../../tools/workspace/workspace-tools.js";
import type { ToolSnapshot } from "../../contracts/tools.js";
import { TurnlogError } from "../../errors/turnlog-error.js";
import { printJson, type CommandContext } from "../cli-io.js";
import { CliError, exitCodes } from "../../errors/cli-error.js";
import { readOnly, withLog } from "../log-directory.js";
import { readSessionEvents } from "../session-events.js";
import { plural } from "../timeline.js";
import { describeThrown } from "../../util/json-value.js";

/**
 * `turnlog replay <session>`: recomputes every decision of the session with the current code and
 * compares it with the log. Exits 0 when identical and 1 on a divergence, like Temporal's
 * replayer, so it can gate CI; a session it cannot replay at all exits 5 (`cannotReplay`), never
 * 1, so a script does not read "cannot" as "diverged" (docs/cli-run.md, "Exit codes").
 *
 * The CLI has no host code, so it replays the sessions it recorded itself: a `turnlog run`
 * session with the workspace tools over its recorded root and its recorded MCP servers started
 * again, any other with the built-in demo tools, the built-in workspace tools, or the definitions
 * the log recorded. A session recorded with other tools is refused with a clear line rather than
 * reported as a pile of divergences.
 */
export async function replayCommand(sessionId: string, options: { location: ResolvedLogLocation; json?: boolean; policy?: string; decisions?: string }, context: CommandContext): Promise<number> {
  try {
    return await replaySession(sessionId, options, context);
  } catch (error) {
    throw asCannotReplay(error);
  }
}

/**
 * Anything that stops a replay before it gives a verdict, as a {@link CliError} exiting 5: a
 * usage error keeps its 2, and an error turnlog did not expect keeps its "unexpected" wording.
 */
function asCannotReplay(error: unknown): unknown {
  if (error instanceof CliError) {
    if (error.exitCode !== exitCodes.failure) return error;
    return new CliError(error.message, { exitCode: exitCodes.cannotReplay, ...(error.cause !== undefined ? { cause: error.cause } : {}) });
  }
  const message = describeThrown(error);
  const line = TurnlogError.isTurnlogError(error) ? message : `unexpected error: ${message} (set TURNLOG_DEBUG=1 for the stack trace)`;
  return new CliError(line, { exitCode: exitCodes.cannotReplay, cause: error });
}

async function replaySession(sessionId: string, options: { location: ResolvedLogLocation; json?: boolean; policy?: string; decisions?: string }, context: CommandContext): Promise<number> {
  const whatIf = options.policy === undefined ? undefined : await readPolicyFile(options.policy);
  const decisionsVersion = options.decisions === undefined ? undefined : parseDecisionsOption(options.decisions);
  const { events, report } = await withLog(options.location, readOnly(context.io), async (log) => {
    const reader = createLogReader(log);
    const events = await readSessionEvents(reader, sessionId, options.location, context.io.env);
    if (decisionsVersion === undefined) refuseUnknownDecisionsVersion(sessionId, events);
    const run = await findRunRecord(log, sessionId, events);
    const state = await reader.state(sessionId);
    const tools = run === undefined ? demoOrRecordedTools(sessionId, events, state) : await runReplayTools(sessionId, run, state, context.io.env);
    try {
      const replayer = createLogReader(log, {
        tools: tools.registry,
        // A real workspace (a run's, a host's built-in workspace tools) resolves paths through
        // symlinks, as the live runtime does (the reader's default); a demo's virtual one, and a
        // host's recorded elsewhere, lexically.
        ...(tools.realWorkspace ? {} : { gate: {} }),
      });
      const report: ReplayReport = await replayer.replay(sessionId, {
        ...(whatIf !== undefined ? { policy: whatIf } : {}),
        ...(decisionsVersion !== undefined ? { decisionsVersion } : {}),
      });
      return { events, report };
    } finally {
      await tools.close();
    }
  });
  // Without --policy or --decisions a changed decision is a divergence like any other, printed as today.
  const preview = whatIf !== undefined || decisionsVersion !== undefined;
  const changed = preview && report.changes.length > 0;
  if (options.json) {
    printJson(context, report);
  } else {
    const { print, paint } = context;
    // Tool names, call IDs and recorded values come from the log: printed escaped (docs/security.md).
    const shown = terminalSafe(report);
    if (decisionsVersion !== undefined) {
      const recorded = recordedVersions(events);
      print(paint("dim", `decisions version ${decisionsVersion} (the session recorded ${recorded.length === 1 ? `version ${recorded[0]}` : `versions ${recorded.join(", ")}`})`));
    }
    printToolsFromLog(shown, context);
    if (changed) {
      // Under another policy or version the divergences mostly follow from the changed decisions: list those.
      print(paint("bad", `would change ${plural(shown.changes.length, "decision")}:`));
      for (const change of shown.changes) print(`  ${formatDecisionChange(change)}`);
      print(paint("dim", `  (${plural(shown.compared, "decision")} recomputed, ${plural(shown.divergences.length, "divergence")} in all; --json lists them)`));
      return exitCodes.failure;
    }
    const counts = `${plural(shown.compared, "decision")} recomputed, ${plural(shown.divergences.length, "divergence")}`;
    print(shown.identical ? `${paint("good", "identical")}: ${counts}` : `${paint("bad", "diverged")}: ${counts}`);
    if (decisionsVersion !== undefined && shown.identical) print(paint("good", `every decision the same under decisions version ${decisionsVersion}`));
    for (const divergence of shown.divergences) print(`  ${formatDivergence(divergence)}`);
    for (const entry of shown.unverifiable) print(paint("dim", `  #${entry.position} ${entry.type} ${entry.callId}: not verifiable (${unverifiableReasons[entry.reason]})`));
    printHostRules(shown, context);
  }
  return report.identical && !changed ? exitCodes.ok : exitCodes.failure;
}

const unverifiableReasons = {
  redacted: "redacted: planned from arguments that held a secret, which the log never stores",
  compressor: "compressor: a summary written by a compressor the CLI does not have",
  "host-code": "host-code: the gate judged the shell text or paths the host's code computed, taken as logged",
} as const;

/**
 * The tools to replay a session with that `turnlog run` did not start: the demo's own for a demo
 * session; for any other (a host's), none — every tool is rebuilt from the definition the log
 * recorded (name, risk class, flags, JSON Schema), so decisions are checked at schema level.
 *
 * A log recorded before tool schemas were recorded (decisions version 1) names its tools without
 * their schema. Those that are turnlog's built-in workspace tools, as the log recorded them
 * (name, schema digest, risk class, flags, limits), are the CLI's own: the session replays with
 * them over its recorded root, exactly. Any other tool without a schema needs its host: one line
 * says so.
 */
function demoOrRecordedTools(sessionId: string, events: readonly RecordedTurnlogEvent[], state: SessionState): ReplayTools {
  const foreign = toolsForeignToDemo(events);
  if (foreign.length === 0) return { registry: new ToolRegistry(demoTools()), realWorkspace: false, close: async () => undefined };
  const withoutSchema = toolsRecordedWithoutSchema(events);
  if (withoutSchema.length === 0) return { registry: new ToolRegistry(), realWorkspace: false, close: async () => undefined };
  const root = state.policy?.workspace.root;
  const builtIn = root === undefined ? [] : workspaceTools({ root });
  const builtInSnapshots = new Map(new ToolRegistry(builtIn).snapshot().map((snapshot) => [snapshot.name, snapshot]));
  const unknown = withoutSchema.filter((recorded) => {
    const own = builtInSnapshots.get(recorded.name);
    return own === undefined || !matchesRecorded(own, recorded);
  });
  if (unknown.length > 0) {
    throw new CliError(
      `session "${sessionId}" was recorded with tools the CLI does not define (${unknown.map((tool) => tool.name).join(", ")}), before turnlog recorded tool schemas in the log — replay this one from its host with runtime.replay("${sessionId}")`,
      { exitCode: exitCodes.cannotReplay },
    );
  }
  const names = new Set(withoutSchema.map((tool) => tool.name));
  return { registry: new ToolRegistry(builtIn.filter((tool) => names.has(tool.name))), realWorkspace: true, close: async () => undefined };
}

/** The tools a replay runs with, whether they work on a real workspace, and how to stop them. */
interface ReplayTools {
  registry: ToolRegistry;
  realWorkspace: boolean;
  close(): Promise<void>;
}

/** Tools a session recorded (at its start or when its tool set changed) without their JSON Schema, one per name. */
function toolsRecordedWithoutSchema(events: readonly RecordedTurnlogEvent[]): ToolSnapshot[] {
  const tools = new Map<string, ToolSnapshot>();
  for (const event of events) {
    if (event.type !== "session.started" && event.type !== "session.tools.changed") continue;
    for (const tool of event.data.tools) if (tool.parameters === undefined && !tools.has(tool.name)) tools.set(tool.name, tool);
  }
  return [...tools.values()];
}

/**
 * Refuses a session recorded under a decisions version this turnlog does not know (a log from a
 * newer turnlog): its decisions cannot be recomputed, which is not a divergence.
 */
function refuseUnknownDecisionsVersion(sessionId: string, events: readonly RecordedTurnlogEvent[]): void {
  const unknown = recordedVersions(events).find((version) => !isKnownDecisionsVersion(version));
  if (unknown === undefined) return;
  throw new CliError(
    `session "${sessionId}" was recorded under decisions version ${String(unknown)}, which this turnlog does not know (it knows versions 1 to ${latestDecisionsVersion}) — replay it with the turnlog that recorded it, or a newer one`,
    { exitCode: exitCodes.cannotReplay },
  );
}

/** The decisions versions a session's log records, in order: its start's and each upgrade's. */
function recordedVersions(events: readonly RecordedTurnlogEvent[]): number[] {
  return events.flatMap((event) => {
    if (event.type === "session.started") return [event.data.decisionsVersion ?? 1];
    if (event.type === "session.decisions.upgraded") return [event.data.to];
    return [];
  });
}

/** Says which decisions were checked against recorded definitions rather than the host's code. */
function printToolsFromLog(report: ReplayReport, context: CommandContext): void {
  if (report.toolsFromLog.length === 0) return;
  const hostCode = report.unverifiable.filter((entry) => entry.reason === "host-code").length;
  context.print(
    context.paint(
      "dim",
      `tools replayed from their recorded definitions (the host's code is not here): ${report.toolsFromLog.join(", ")} — ${plural(report.schemaLevel.length, "plan")} checked against the recorded schema, ${plural(hostCode, "gate decision")} taken as logged; every other decision checked exactly`,
    ),
  );
}

/** Lists the answers of tools' `needsApproval` (host code) replay took from the log instead of recomputing them. */
function printHostRules(report: ReplayReport, context: CommandContext): void {
  if (report.hostRules.length === 0) return;
  context.print(context.paint("dim", `${plural(report.hostRules.length, "needsApproval answer")} of the host's code taken as logged (the gate decisions after them recomputed):`));
  for (const entry of report.hostRules) {
    const answer = entry.error !== undefined ? `failed (${entry.error}), so it asked` : entry.needsApproval ? "needs approval" : "no approval needed";
    context.print(context.paint("dim", `  #${entry.position} ${entry.callId} ${entry.tool}: ${answer}`));
  }
}

/** `--decisions latest` or a version number; anything else is a usage error. */
function parseDecisionsOption(value: string): number {
  const requested = value === "latest" ? "latest" : /^[1-9][0-9]*$/.test(value) ? Number(value) : undefined;
  if (requested !== undefined && (requested === "latest" || isKnownDecisionsVersion(requested))) return resolveDecisionsVersion(requested);
  throw new CliError(`--decisions takes "latest" or a decisions version from 1 to ${latestDecisionsVersion} (got "${value}")`, { exitCode: exitCodes.usage });
}

/** A run session's tools, rebuilt: refused in one line when they are not the ones it recorded. */
async function runReplayTools(sessionId: string, run: RunRecord, state: SessionState, env: NodeJS.ProcessEnv): Promise<ReplayTools> {
  if (state.policy === null) throw new CliError(`session "${sessionId}" has no session.started event — "npx turnlog verify" checks the log`);
  const tools = await runReplayRegistry(run, state.policy.workspace.root, env, state.tools);
  const differences = toolSetDifferences(state.tools, tools.registry.snapshot());
  if (differences.length > 0) {
    await tools.close();
    throw new CliError(changedToolsMessage(sessionId, differences));
  }
  return { ...tools, realWorkspace: true };
}

/**
 * Reads `--policy <file>`: a partial policy (approvalMode, workspace, deny, allow,
 * blockedRiskClasses) merged over the recorded one. A missing file exits 1, a file that is not
 * JSON or not a partial policy exits 2, each with one line.
 */
async function readPolicyFile(file: string): Promise<PolicyInput> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new CliError(code === "ENOENT" ? `policy file not found: ${file}` : `cannot read policy file ${file}: ${code ?? String(error)}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new CliError(`policy file ${file} is not valid JSON: ${(error as Error).message}`, { exitCode: exitCodes.usage });
  }
  const parsed = PolicySnapshotSchema.partial().strict().safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue === undefined || issue.path.length === 0 ? "" : ` at ${issue.path.join(".")}`;
    throw new CliError(`policy file ${file} is not a valid partial policy${where}: ${issue?.message ?? "invalid"}`, { exitCode: exitCodes.usage });
  }
  return parsed.data;
}

/** `#8 turn.tool_calls.gated data.decisions[0].rule: logged "mode:auto-edit", recomputed "mode:ask"`. */
export function formatDivergence(divergence: Divergence): string {
  return `#${divergence.position} ${divergence.type} ${divergence.path}: logged ${formatValue(divergence.expected)}, recomputed ${formatValue(divergence.actual)}`;
}

function formatValue(value: unknown): string {
  const text = JSON.stringify(value) ?? "undefined";
  return text.length > 100 ? `${text.slice(0, 99)}…` : text;
}

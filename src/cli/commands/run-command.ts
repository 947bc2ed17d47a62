import { isPostgresLocation, type ResolvedLogLocation } from "../../log/log-location.js";
import { terminalSafe, terminalText } from "../terminal-text.js";
import path from "node:path";
import { isWithin } from "../../tools/workspace/workspace-path.js";
import { randomBytes } from "node:crypto";
import type { ApprovalMode } from "../../contracts/policy.js";
import type { RecordedTurnlogEvent } from "../../log/event-log.js";
import { UnknownSessionError } from "../../errors/unknown-session-error.js";
import { createLogReader, isValidSessionId, readEvent, sessionStatus, sessionStream, type SessionState } from "../../reader/index.js";
import type { SendOutcome } from "../../runtime/provider-turn-loop.js";
import { approverName, type CommandContext } from "../cli-io.js";
import { CliError, exitCodes } from "../../errors/cli-error.js";
import { describeLocation, logFlag, logExists, withLog } from "../log-directory.js";
import { userSeals } from "../../log/seal/user-seals.js";
import { changedToolsMessage } from "../open-recorded-session.js";
import { answeringFor, cancelOnInterrupt, driveSession, printRunEnding } from "../run/run-driver.js";
import { RunPresenter } from "../run/run-presenter.js";
import { findRunRecord, recordRun, type RunRecord } from "../run/run-record.js";
import { createRunRuntime, mcpEnvironmentFor, toolSetDifferences } from "../run/run-runtime.js";
import { confirmRunConfig } from "../run/config-confirmation.js";
import { continuedRunRecord, loadRunConfig, requireApiKey, resolveRunSettings, type RunFlags, type RunSettings } from "../run/run-settings.js";
import { plural } from "../timeline.js";
import { exitCodeOf } from "./resume-command.js";

/** Options of `turnlog run`. */
export interface RunOptions extends RunFlags {
  location: ResolvedLogLocation;
  /** Continue this session (a new user message), or create it under this ID. */
  session?: string;
  /** Approve every held call (recorded with the note that `--yes` did it). */
  yes?: boolean;
  /** Confirm the config file's content on the command line (it applies, and is remembered). */
  trustConfig?: boolean;
  /** `--witness <dir|url>`: keep the log's witness there instead of beside the seal key (docs/security.md). */
  witness?: string;
}

/** A session `turnlog run` continues, as the log holds it. */
interface ContinuedSession {
  record: RunRecord;
  state: SessionState;
}

/**
 * `turnlog run "prompt"`: a real agent session in the current directory (the workspace root,
 * trusted) with the built-in workspace tools and any MCP servers, against an OpenAI-compatible or
 * Anthropic endpoint (or an AI SDK provider package installed in the workspace, `--ai-sdk`), into
 * the log at `--dir`. Streams the model's text, shows each tool call with
 * the gate's decision and rule, answers held calls (`--yes`, or the person at the terminal, or
 * nobody: exit 3 with the commands that answer them), and ends with the session ID and the
 * commands that replay, audit and show it. Exits 0 completed, 1 failed, 2 usage, 3 awaiting
 * approval, 4 stopped. docs/cli-run.md has the details.
 *
 * @example
 * // turnlog run --base-url http://localhost:11434/v1 --model qwen2.5-coder "add a test for parse()"
 */
export async function runCommand(promptWords: readonly string[], options: RunOptions, context: CommandContext): Promise<number> {
  const prompt = promptWords.join(" ").trim();
  if (prompt === "") throw new CliError('run needs a message, e.g. turnlog run "what does this project do?"', { exitCode: exitCodes.usage });
  if (options.session !== undefined && !isValidSessionId(options.session)) {
    throw new CliError(`--session "${options.session}" is not a valid session ID (letters, digits, ".", "_", "-"; at most 128)`, { exitCode: exitCodes.usage });
  }
  const { io } = context;
  const cwd = process.cwd();

  const continued = options.session !== undefined ? await findContinuedSession(options.location, options.session) : undefined;
  let settings: RunSettings;
  let root: string;
  if (continued !== undefined && options.session !== undefined) {
    const policy = continued.state.policy;
    if (policy === null) throw new CliError(`session "${options.session}" has no session.started event — "npx turnlog verify" checks the log`);
    const record = continuedRunRecord(continued.record, options, policy.approvalMode, options.session);
    // A continued session keeps its workspace, whichever directory it is continued from.
    root = policy.workspace.root;
    settings = { record, mode: policy.approvalMode, budgets: {}, mcpEnvironment: await mcpEnvironmentFor(record, root, io.env) };
  } else {
    const loaded = await loadRunConfig(options, cwd);
    // A config file may have been written by the model: none of its settings applies until the
    // person confirmed exactly its content (docs/cli-run.md, "What the file may not do without you").
    const applied = loaded === undefined ? undefined : await confirmRunConfig(loaded, { context, workspace: cwd, trust: options.trustConfig === true });
    settings = resolveRunSettings(options, applied, loaded !== undefined && applied === undefined ? { unconfirmed: loaded.file } : {});
    root = cwd;
  }
  requireApiKey(settings.record, io.env);
  const sessionId = options.session ?? newRunSessionId(Date.now());

  return withLog(options.location, { create: true, durability: "sync" }, async (log) => {
    const { print, paint } = context;
    const presenter = new RunPresenter({ out: io.stdout, paint, live: io.stdout.isTTY === true, modelLabel: settings.record.model });
    const { runtime, toolSet, uncontained, sandboxCaveats, redact } = await createRunRuntime({
      log,
      record: settings.record,
      root,
      mcpEnvironment: settings.mcpEnvironment,
      env: io.env,
      mode: settings.mode,
      budgets: settings.budgets,
      ...(settings.historyMaxTokens !== undefined ? { historyMaxTokens: settings.historyMaxTokens } : {}),
      onDelta: presenter.onDelta,
      onAttemptDiscarded: presenter.onAttemptDiscarded,
      ...(continued !== undefined ? { recordedTools: continued.state.tools } : {}),
      seals: await userSeals(options.location, io.env, options.witness !== undefined ? { witness: options.witness } : {}),
    });
    // The model's streamed text is shown redacted, the provider's key included, as the log holds it.
    presenter.redactWith(redact);
    try {
      if (continued !== undefined) {
        const differences = toolSetDifferences(continued.state.tools, toolSet);
        if (differences.length > 0) throw new CliError(changedToolsMessage(sessionId, differences));
        const status = sessionStatus(continued.state);
        if (status === "awaiting-approval" || status === "active") {
          throw new CliError(`session "${sessionId}" has an unfinished turn — answer its held calls and continue it first: "npx turnlog resume ${sessionId}${logFlag(options.location, io.env)}"`);
        }
      }
      // Recorded before the session starts, so a process that dies mid-turn leaves a session later commands can continue.
      if (continued === undefined || JSON.stringify(continued.record) !== JSON.stringify(settings.record)) await recordRun(log, sessionId, settings.record);

      printHeader(context, { sessionId, record: settings.record, mode: settings.mode, root, toolCount: toolSet.length, location: options.location, continued: continued !== undefined, cwd, ...(uncontained !== undefined ? { uncontained } : {}), ...(sandboxCaveats !== undefined ? { sandboxCaveats } : {}) });
      print(`${paint("bold", "user ›")} ${terminalText(prompt)}`);
      print();

      const session = await runtime.openSession(sessionId);
      const unsubscribe = log.subscribe((event) => presenter.onEvent(readEvent(event)), { stream: sessionStream(sessionId) });
      const interrupt = cancelOnInterrupt(presenter);
      let outcome: SendOutcome;
      try {
        outcome = await driveSession(() => session.send(prompt, { signal: interrupt.signal }), {
          session,
          presenter,
          answering: answeringFor(io, options.yes === true),
          by: approverName(io.env),
          signal: interrupt.signal,
          paint,
        });
      } finally {
        interrupt.dispose();
        unsubscribe();
        presenter.stop();
      }
      const events: RecordedTurnlogEvent[] = await runtime.events(sessionId);
      printRunEnding(outcome, session.state(), events.length, { sessionId, location: options.location, env: io.env, print, paint });
      return exitCodeOf(outcome);
    } finally {
      await runtime.close();
    }
  });
}

/**
 * The session `--session ID` names, when the log has it: `turnlog run` continues only a session it
 * started (another one has tools and a provider the CLI cannot know); a new ID is created.
 */
async function findContinuedSession(location: ResolvedLogLocation, sessionId: string): Promise<ContinuedSession | undefined> {
  if (!isPostgresLocation(location) && !logExists(location.dir)) return undefined;
  // A PostgreSQL schema is created (migrated) here as the run would create it anyway.
  return withLog(location, { create: isPostgresLocation(location) }, async (log) => {
    const reader = createLogReader(log);
    let events: RecordedTurnlogEvent[];
    try {
      events = await reader.events(sessionId);
    } catch (error) {
      if (UnknownSessionError.isInstance(error)) return undefined;
      throw error;
    }
    const record = await findRunRecord(log, sessionId, events);
    if (record === undefined) {
      throw new CliError(`session "${sessionId}" was not started by "turnlog run", so run cannot continue it — leave out --session for a new session, or name a new ID`);
    }
    return { record, state: await reader.state(sessionId) };
  });
}

function printHeader(
  context: CommandContext,
  header: { sessionId: string; record: RunRecord; mode: ApprovalMode; root: string; toolCount: number; location: ResolvedLogLocation; continued: boolean; cwd: string; uncontained?: string; sandboxCaveats?: readonly string[] },
): void {
  const { print, paint } = context;
  // A continued session's record and workspace come from the log: printed escaped (docs/security.md).
  const record = terminalSafe(header.record);
  const root = terminalText(header.root);
  const servers = record.mcpServers.length === 0 ? "" : ` · MCP ${record.mcpServers.map((server) => server.name).join(", ")}`;
  const provider = "aiSdk" in record ? `${record.aiSdk} ${record.model} at ${record.baseURL ?? "the package's default endpoint"}` : `${record.provider} ${record.model} at ${record.baseURL}`;
  print(`${paint("accent", "turnlog run")} ${paint("dim", `${provider} · mode ${header.mode}`)}`);
  print(`${paint("dim", "workspace")} ${root} ${paint("dim", `(trusted) · ${plural(header.toolCount, "tool")}${servers}`)}`);
  print(`${paint("dim", "session  ")} ${header.sessionId}${header.continued ? paint("dim", " (continued)") : ""} ${paint("dim", `· log ${describeLocation(header.location)}`)}`);
  if (header.continued && header.root !== header.cwd) print(paint("dim", "(a continued session keeps the workspace it started in)"));
  if ("aiSdk" in record && record.apiKeyEnv === undefined) {
    print(paint("warn", `note: turnlog does not know which variable ${record.aiSdk} reads its key from, so the key is left to the package and is not redacted from the log — name it with --api-key-env`));
  }
  if (header.uncontained === undefined) {
    print(paint("dim", "commands run in a sandbox without privileges, root or not: only the workspace is writable (its .git config and hooks, .vscode, .envrc and the like read-only), a private /tmp and home, no network, bounded processes and memory; nothing of yours outside the workspace is visible"));
    for (const caveat of header.sandboxCaveats ?? []) print(paint("warn", `note: ${caveat}`));
  } else if (header.mode !== "read-only") {
    // docs/security.md#containment-the-classifier-decides-what-may-run-outside-the-sandbox: without containment only known-safe reads run unasked, in every mode.
    print(paint("warn", `note: no command sandbox (${header.uncontained}): every command but a known-safe read asks first; install bubblewrap (apt-get install bubblewrap) to let full-auto run them contained`));
  }
  if (header.mode === "full-auto" && header.uncontained !== undefined && !isPostgresLocation(header.location) && isWithin(path.resolve(header.cwd, header.location.dir), path.resolve(header.root))) {
    print(paint("warn", `note: the log is inside the workspace; --dir keeps it out of reach`));
  }
  print();
}

/**
 * `run-20250612-115959-3fa2`: sortable by time, unique enough for runs in the same second.
 *
 * @example
 * newRunSessionId(Date.now()); // "run-20250612-115959-3fa2"
 */
export function newRunSessionId(now: number): string {
  const stamp = new Date(now).toISOString().replace(/[-:]/g, "").replace("T", "-").slice(0, 15);
  return `run-${stamp}-${randomBytes(2).toString("hex")}`;
}

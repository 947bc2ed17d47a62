import type { ResolvedLogLocation } from "../log/log-location.js";
import type { DiscardedAttempt } from "../runtime/provider-turn-loop.js";
import type { RecordedTurnlogEvent } from "../log/event-log.js";
import { createLogReader } from "../reader/index.js";
import type { Runtime } from "../runtime/create-runtime.js";
import type { Session } from "../runtime/session.js";
import { CliError } from "../errors/cli-error.js";
import { continuedDemoProvider, createDemoRuntime, notADemoSession } from "./demo/demo-runtime.js";
import { withLog } from "./log-directory.js";
import { userSeals } from "../log/seal/user-seals.js";
import { findRunRecord, type RunRecord } from "./run/run-record.js";
import { createRunRuntime, mcpEnvironmentFor, toolSetDifferences } from "./run/run-runtime.js";
import { requireApiKey } from "./run/run-settings.js";
import { readSessionEvents } from "./session-events.js";

/** A session opened in a new process, ready to be answered or resumed. */
export interface OpenedSession {
  runtime: Runtime;
  session: Session;
  /** The session's events as they were before it was opened (opening may append recovery events). */
  recorded: RecordedTurnlogEvent[];
  /** Set for a session `turnlog run` started: what it runs with. Absent for a demo session. */
  run?: RunRecord;
  /** A run session's redaction, its key included, for what is shown live (`RunRuntime.redact`). */
  redact?: (text: string) => string;
}

/** What a host calls instead of each CLI command, for the refusal of a session the CLI did not record. */
const hostWay = {
  resume: "a host resumes its own sessions with session.resume()",
} as const;

/** How {@link withRecordedSession} opens a session. */
export interface OpenSessionOptions {
  env: NodeJS.ProcessEnv;
  command: keyof typeof hostWay;
  /** Receives the streamed text of a run session's provider (for `resume`). */
  onDelta?: (text: string) => void;
  /** Told when an attempt whose text was streamed failed and was thrown away. */
  onAttemptDiscarded?: (attempt: DiscardedAttempt) => void;
}

/**
 * Opens a session the CLI recorded, with the runtime it was recorded with, runs `work`, and closes
 * everything whatever happens:
 *
 * - a session `turnlog run` started: its recorded provider (the key is read from the variable it
 *   names; `resume` needs it), the workspace tools over its recorded
 *   root, and its MCP servers started again — refused when those tools are no longer the ones the
 *   session recorded;
 * - a session `turnlog demo` recorded: the demo's tools over a fresh in-memory workspace, and its
 *   scripted provider continuing the script where the session left it.
 *
 * The CLI has no host code: any other session is refused in one line rather than continued with
 * tools and answers it was never meant to get.
 *
 * @example
 * await withRecordedSession({ dir: ".turnlog" }, id, { env: process.env, command: "resume" }, ({ session }) => session.resume());
 */
export async function withRecordedSession<T>(location: ResolvedLogLocation, sessionId: string, options: OpenSessionOptions, work: (opened: OpenedSession) => Promise<T>): Promise<T> {
  const { env, command } = options;
  return withLog(location, {}, async (log) => {
    // Whatever this command appends (an answer, a resumed turn, a recovery) is sealed like the rest.
    const seals = await userSeals(location, env);
    const reader = createLogReader(log);
    const recorded = await readSessionEvents(reader, sessionId, location, env);
    const run = await findRunRecord(log, sessionId, recorded);
    let runtime: Runtime;
    let redact: ((text: string) => string) | undefined;
    if (run !== undefined) {
      const state = await reader.state(sessionId);
      if (state.policy === null) throw new CliError(`session "${sessionId}" has no session.started event — "npx turnlog verify" checks the log`);
      // Only a resume calls the provider.
      if (command === "resume") requireApiKey(run, env);
      const created = await createRunRuntime({
        log,
        record: run,
        root: state.policy.workspace.root,
        mcpEnvironment: await mcpEnvironmentFor(run, state.policy.workspace.root, env),
        env,
        recordedTools: state.tools,
        ...(options.onDelta !== undefined ? { onDelta: options.onDelta } : {}),
        ...(options.onAttemptDiscarded !== undefined ? { onAttemptDiscarded: options.onAttemptDiscarded } : {}),
        seals,
      });
      runtime = created.runtime;
      redact = created.redact;
      const differences = toolSetDifferences(state.tools, created.toolSet);
      if (differences.length > 0) {
        await runtime.close();
        throw new CliError(changedToolsMessage(sessionId, differences));
      }
    } else {
      const problem = notADemoSession(recorded);
      if (problem !== undefined) {
        throw new CliError(`session "${sessionId}" was not recorded by "turnlog demo" or "turnlog run" (${problem}) — ${command} works for CLI sessions; ${hostWay[command]}`);
      }
      runtime = await createDemoRuntime({ log, provider: continuedDemoProvider(recorded), seals });
    }
    try {
      const session = await runtime.openSession(sessionId);
      return await work({ runtime, session, recorded, ...(run !== undefined ? { run } : {}), ...(redact !== undefined ? { redact } : {}) });
    } finally {
      await runtime.close();
    }
  });
}

/**
 * The one line that refuses a run session whose tools changed since it was recorded (an MCP server
 * upgraded, a turnlog whose workspace tools differ).
 *
 * @example
 * changedToolsMessage("run-1", ["mcp__everything__echo: its input schema changed"]);
 */
export function changedToolsMessage(sessionId: string, differences: readonly string[]): string {
  const shown = differences.slice(0, 4).join("; ") + (differences.length > 4 ? `; and ${differences.length - 4} more` : "");
  return `the tools of session "${sessionId}" are not the ones it was recorded with (${shown}) — its decisions were made with those; start a new session`;
}

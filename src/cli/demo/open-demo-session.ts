import type { RecordedEvent } from "../../log/event-log.js";
import type { Runtime } from "../../runtime/create-runtime.js";
import type { Session } from "../../runtime/session.js";
import { CliError } from "../cli-error.js";
import { withLog } from "../log-directory.js";
import { readSessionEvents } from "../session-events.js";
import { continuedDemoProvider, createDemoRuntime, notADemoSession } from "./demo-runtime.js";

/** A demo session opened in a new process, ready to be answered or resumed. */
export interface OpenedDemoSession {
  runtime: Runtime;
  session: Session;
  /** The session's events as they were before it was opened (opening may append recovery events). */
  recorded: RecordedEvent[];
}

/** What a host calls instead of each CLI command, for the refusal of a session the demo did not record. */
const hostWay = {
  approve: "a host answers its own held calls with session.approve() and then session.resume()",
  deny: "a host answers its own held calls with session.deny() and then session.resume()",
  resume: "a host resumes its own sessions with session.resume()",
} as const;

/**
 * Opens a session that `turnlog demo` recorded with the demo's runtime — the same tools over a
 * fresh in-memory workspace, policy, budgets and provider ID — whose scripted provider continues
 * the demo script where the session left it. Runs `work` and closes everything whatever happens.
 *
 * The CLI has no host code: a session recorded by another program (another provider, other tools)
 * is refused in one line rather than continued with tools and answers it was never meant to get.
 *
 * @example
 * await withDemoSession(".turnlog", id, process.env, "resume", ({ session }) => session.resume());
 */
export async function withDemoSession<T>(
  dir: string,
  sessionId: string,
  env: NodeJS.ProcessEnv,
  command: keyof typeof hostWay,
  work: (opened: OpenedDemoSession) => Promise<T>,
): Promise<T> {
  return withLog(dir, {}, async (log) => {
    const recorded = await readSessionEvents(log, sessionId, dir, env);
    const problem = notADemoSession(recorded);
    if (problem !== undefined) {
      throw new CliError(`session "${sessionId}" was not recorded by "turnlog demo" (${problem}) — ${command} works for demo sessions; ${hostWay[command]}`);
    }
    const runtime = await createDemoRuntime({ log, provider: continuedDemoProvider(recorded) });
    try {
      const session = await runtime.openSession(sessionId);
      return await work({ runtime, session, recorded });
    } finally {
      await runtime.close();
    }
  });
}

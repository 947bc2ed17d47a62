import { demoTools, toolsForeignToDemo } from "../demo/demo-runtime.js";
import { verifyReplay, type Divergence } from "../../replay/replay-verifier.js";
import { ToolRegistry } from "../../tools/tool-registry.js";
import { printJson, type CommandContext } from "../cli-io.js";
import { CliError, exitCodes } from "../cli-error.js";
import { withLog } from "../log-directory.js";
import { readSessionEvents } from "../session-events.js";
import { plural } from "../timeline.js";

/**
 * `turnlog replay <session>`: recomputes every decision of the session with the current code and
 * compares it with the log. Exits 0 when identical and 1 on a divergence, like Temporal's
 * replayer, so it can gate CI.
 *
 * The CLI has no host code, so it replays with the built-in demo tools; a session recorded with
 * other tools is refused with a clear line rather than reported as a pile of divergences.
 */
export async function replayCommand(sessionId: string, options: { dir: string; json?: boolean }, context: CommandContext): Promise<number> {
  const events = await withLog(options.dir, {}, (log) => readSessionEvents(log, sessionId, options.dir, context.io.env));
  const registry = new ToolRegistry(demoTools());
  const foreign = toolsForeignToDemo(events);
  if (foreign.length > 0) {
    throw new CliError(
      `session "${sessionId}" was recorded with tools the CLI does not define (${foreign.join(", ")}) — the CLI replays demo sessions only; replay this one from its host with runtime.replay("${sessionId}")`,
    );
  }
  const report = await verifyReplay(events, { registry });
  if (options.json) {
    printJson(context, report);
  } else {
    const { print, paint } = context;
    const counts = `${plural(report.compared, "decision")} recomputed, ${plural(report.divergences.length, "divergence")}`;
    print(report.identical ? `${paint("good", "identical")}: ${counts}` : `${paint("bad", "diverged")}: ${counts}`);
    for (const divergence of report.divergences) print(`  ${formatDivergence(divergence)}`);
    for (const entry of report.unverifiable) {
      print(paint("dim", `  #${entry.position} ${entry.type} ${entry.callId}: not verifiable (${entry.reason}: planned from arguments that held a secret, which the log never stores)`));
    }
  }
  return report.identical ? exitCodes.ok : exitCodes.failure;
}

/** `#8 turn.tool_calls.gated data.decisions[0].rule: logged "mode:auto-edit", recomputed "mode:ask"`. */
export function formatDivergence(divergence: Divergence): string {
  return `#${divergence.position} ${divergence.type} ${divergence.path}: logged ${formatValue(divergence.expected)}, recomputed ${formatValue(divergence.actual)}`;
}

function formatValue(value: unknown): string {
  const text = JSON.stringify(value) ?? "undefined";
  return text.length > 100 ? `${text.slice(0, 99)}…` : text;
}

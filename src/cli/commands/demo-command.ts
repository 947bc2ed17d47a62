import type { ResolvedLogLocation } from "../../log/log-location.js";
import { runDemo } from "../demo/demo-session.js";
import type { CommandContext } from "../cli-io.js";
import { exitCodes } from "../../errors/cli-error.js";

/**
 * `turnlog demo [--pause]`: records the built-in scripted session and prints its timeline. Exits 0
 * when the session went as scripted — its first message completed, its second stopped by the
 * iteration budget, which the demo shows on purpose — and, with `--pause`, 3: a turn left awaiting
 * approval (docs/design.md#11-the-reader-the-cli-and-the-view).
 */
export async function demoCommand(options: { location: ResolvedLogLocation; pause?: boolean }, context: CommandContext): Promise<number> {
  const result = await runDemo({ location: options.location, out: context.io.stdout, color: context.color, env: context.io.env, pause: options.pause === true });
  // Anything else means the runtime no longer behaves as the script expects.
  if (result.paused) return result.first.status === "awaiting-approval" ? exitCodes.awaitingApproval : exitCodes.failure;
  const asScripted = result.first.status === "completed" && result.second?.status === "stopped" && result.second.reason === "budget:max-iterations";
  return asScripted ? exitCodes.ok : exitCodes.failure;
}

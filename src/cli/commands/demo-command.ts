import { runDemo } from "../demo/demo-session.js";
import type { CommandContext } from "../cli-io.js";
import { exitCodes } from "../cli-error.js";

/** `turnlog demo`: records the built-in scripted session and prints its timeline. */
export async function demoCommand(options: { dir: string }, context: CommandContext): Promise<number> {
  const { outcome } = await runDemo({ dir: options.dir, out: context.io.stdout, color: context.color, env: context.io.env });
  // Anything but a completed session means the runtime no longer behaves as the script expects.
  return outcome.status === "completed" ? exitCodes.ok : exitCodes.failure;
}

import type { ResolvedLogLocation } from "../../log/log-location.js";
import { createLogReader } from "../../reader/index.js";
import { printJson, type CommandContext } from "../cli-io.js";
import { jsonText } from "../terminal-text.js";
import { CliError, exitCodes } from "../../errors/cli-error.js";
import { readOnly, withLog } from "../log-directory.js";
import { forSession } from "../session-events.js";
import { isProviderFormatName, providerFormatNames } from "../../providers/formats.js";

/**
 * `turnlog history <session> --format …`: the provider-native history a next request would carry,
 * rebuilt from the log (nothing is appended), with its diagnostics.
 */
export async function historyCommand(
  sessionId: string,
  options: { location: ResolvedLogLocation; format: string; maxTokens?: string; json?: boolean },
  context: CommandContext,
): Promise<number> {
  const format = options.format;
  if (!isProviderFormatName(format)) {
    throw new CliError(`--format must be ${providerFormatNames.join(" or ")}, not "${format}"`, { exitCode: exitCodes.usage });
  }
  const maxTokens = options.maxTokens === undefined ? undefined : Number(options.maxTokens);
  if (maxTokens !== undefined && (!Number.isInteger(maxTokens) || maxTokens <= 0)) {
    throw new CliError(`--max-tokens must be a positive whole number, not "${options.maxTokens}"`, { exitCode: exitCodes.usage });
  }
  const historyOptions = { format, ...(maxTokens !== undefined ? { maxTokens } : {}) };
  const built = await withLog(options.location, readOnly(context.io), (log) => forSession(createLogReader(log).history(sessionId, historyOptions), sessionId, options.location, context.io.env));
  const output = {
    format: options.format,
    ...(built.system !== undefined ? { system: built.system } : {}),
    messages: built.messages,
    diagnostics: built.diagnostics,
  };
  if (options.json) {
    printJson(context, output);
  } else {
    // Text mode: the same JSON, indented, so it can be read and piped alike.
    context.print(jsonText(output, 2));
  }
  return exitCodes.ok;
}

import { hasCode, TurnlogError } from "./turnlog-error.js";

/**
 * The options a host passed to `createRuntime` are wrong: an unknown key (a typo such as
 * `approvalmode`), a value of the wrong type or out of range, a provider without `complete`.
 * Raised before anything starts — no MCP server is connected and no log is opened. `problems`
 * holds one readable line per problem, and the message is those lines.
 *
 * @example
 * try {
 *   await createRuntime({ provider, policy: { approvalmode: "auto-edit" } });
 * } catch (error) {
 *   if (ConfigError.isInstance(error)) console.error(error.problems.join("\n"));
 *   // policy.approvalmode: unknown option (did you mean approvalMode?)
 * }
 */
export class ConfigError extends TurnlogError {
  readonly code = "TURNLOG_CONFIG";

  constructor(readonly problems: readonly string[]) {
    super(problems.join("\n"));
  }

  static isInstance(value: unknown): value is ConfigError {
    return hasCode(value, "TURNLOG_CONFIG");
  }
}

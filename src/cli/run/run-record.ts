import { z } from "zod";
import type { EventLog, RecordedTurnlogEvent } from "../../log/event-log.js";
import { readEvent, sessionStream } from "../../reader/index.js";
import { CliError } from "../../errors/cli-error.js";
import { environmentVariableName, ProviderKindSchema } from "./run-config-file.js";

/**
 * An MCP server as a run records it: enough to start it again, and never a secret — of its
 * environment only the variable NAMES are kept (their values are often tokens).
 */
export const RecordedMcpServerSchema = z.union([
  z.strictObject({ name: z.string().min(1), command: z.string().min(1), args: z.array(z.string()), env: z.array(z.string().regex(environmentVariableName)).optional() }),
  z.strictObject({ name: z.string().min(1), url: z.string().min(1) }),
]);
export type RecordedMcpServer = z.infer<typeof RecordedMcpServerSchema>;

/**
 * What `turnlog approve`, `deny`, `resume` and `replay`, and `turnlog run --session`, need to
 * continue or re-check a session that `turnlog run` started, beyond what `session.started`
 * already records (policy and mode, workspace root, tool snapshot, budgets, history settings):
 * which provider to call, and how to start the MCP servers again. The API key is not in it —
 * only the NAME of the variable that holds it.
 *
 * Two shapes: turnlog's own adapters (`provider`), or an AI SDK provider package the workspace
 * has installed (`aiSdk`: the package's name, loaded again from the workspace by `resume`).
 *
 * @example
 * { provider: "openai", baseURL: "http://localhost:11434/v1", model: "qwen2.5-coder", apiKeyEnv: "OPENAI_API_KEY", mcpServers: [] }
 * { aiSdk: "@ai-sdk/openai", model: "gpt-5", apiKeyEnv: "OPENAI_API_KEY", mcpServers: [] }
 */
export const AdapterRunRecordSchema = z.strictObject({
  provider: ProviderKindSchema,
  /** Resolved: the provider's default when none was given, so a later default cannot change it. */
  baseURL: z.string().min(1),
  model: z.string().min(1),
  apiKeyEnv: z.string().regex(environmentVariableName),
  mcpServers: z.array(RecordedMcpServerSchema),
  /** The config file the run read, if any: MCP environment values are read from it again. */
  configFile: z.string().optional(),
});
export type AdapterRunRecord = z.infer<typeof AdapterRunRecordSchema>;

/** A run through an AI SDK provider package (`turnlog run --ai-sdk <package>`; docs/cli-run.md). */
export const AiSdkRunRecordSchema = z.strictObject({
  /** The package's name (`@ai-sdk/openai`), resolved from the workspace root. */
  aiSdk: z.string().min(1),
  model: z.string().min(1),
  /** Given with `--base-url`; absent, the package's own default (which may read its own variable). */
  baseURL: z.string().min(1).optional(),
  /** The variable the key is read from; absent for a package turnlog does not know and no `--api-key-env`. */
  apiKeyEnv: z.string().regex(environmentVariableName).optional(),
  mcpServers: z.array(RecordedMcpServerSchema),
  configFile: z.string().optional(),
});
export type AiSdkRunRecord = z.infer<typeof AiSdkRunRecordSchema>;

/** Either shape; both are strict, so a record is exactly one of them. */
export const RunRecordSchema = z.union([AdapterRunRecordSchema, AiSdkRunRecordSchema]);
export type RunRecord = z.infer<typeof RunRecordSchema>;

/** The event type of a run record, in the session's run stream. */
export const runConfiguredType = "cli.run.configured";

/**
 * The stream that holds a session's run records: in the same log as the session (so it travels,
 * locks and verifies with it, hash chain included), apart from the session's own stream (so the
 * runtime's event catalogue, replay and `turnlog sessions` never see it). The last record wins.
 *
 * @example
 * runStream("run-1"); // "cli-run-run-1"
 */
export function runStream(sessionId: string): string {
  return `cli-run-${sessionId}`;
}

/**
 * Appends a run record for a session.
 *
 * @example
 * await recordRun(log, "run-1", { provider: "openai", baseURL, model, apiKeyEnv: "OPENAI_API_KEY", mcpServers: [] });
 */
export async function recordRun(log: EventLog, sessionId: string, record: RunRecord): Promise<void> {
  await log.appendToStream(runStream(sessionId), [{ type: runConfiguredType, data: RunRecordSchema.parse(record) }]);
}

/**
 * The run record of a session: its own last one, or — for a session `turnlog fork` made from a
 * run session — its origin's. `undefined` for a session `turnlog run` did not start.
 *
 * @example
 * const record = await findRunRecord(log, "run-1", events);
 */
export async function findRunRecord(log: EventLog, sessionId: string, events: readonly RecordedTurnlogEvent[]): Promise<RunRecord | undefined> {
  let id = sessionId;
  let started: RecordedTurnlogEvent | undefined = events.find((event) => event.type === "session.started");
  // A fork of a fork of …: bounded, since a damaged log could make the chain loop.
  for (let depth = 0; depth < 32; depth += 1) {
    const records = await log.readStream(runStream(id), { maxCount: Number.MAX_SAFE_INTEGER });
    const last = records.filter((event) => event.type === runConfiguredType).at(-1);
    if (last !== undefined) {
      const parsed = RunRecordSchema.safeParse(last.data);
      if (!parsed.success) throw new CliError(`the run record of session "${sessionId}" is damaged (${runStream(id)} #${last.meta.streamPosition}) — "npx turnlog verify" checks the log`);
      return parsed.data;
    }
    const forkedFrom = started?.type === "session.started" ? started.data.forkedFrom?.sessionId : undefined;
    if (forkedFrom === undefined) return undefined;
    id = forkedFrom;
    const [first] = await log.readStream(sessionStream(id), { maxCount: 1 });
    started = first === undefined ? undefined : readEvent(first);
  }
  return undefined;
}

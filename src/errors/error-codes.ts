/**
 * Who must act when a turnlog error reaches a host:
 *
 * - `configuration`: what the host configured (runtime options, tool definitions, an MCP server's
 *   command, a key file) is wrong; fix it and start again. Retrying unchanged fails the same way.
 * - `model`: the model wrote something turnlog cannot use. It is data for the model, not a host
 *   failure: such an error is turned into a result the model reads and never reaches a host.
 * - `provider`: the model provider failed (HTTP status, transport, timeout, refusal); the turn
 *   records it, and `retryable` says whether trying again may help.
 * - `log`: the event log cannot be used as it is: another process holds it, it is damaged, it was
 *   written by another turnlog, its server cannot be reached, or it holds events the turn machine
 *   does not accept. Free it, check it with `verify`, reach its server, or use the turnlog that
 *   wrote it.
 * - `host`: the host's code asked for something the current state does not allow (a session or
 *   position that does not exist, a closed log, an append that lost a race); change the call, or
 *   reload and retry.
 * - `person`: the person at the `turnlog` command made a mistake; the CLI prints one line.
 */
export type ErrorActor = "configuration" | "model" | "provider" | "log" | "host" | "person";

/** One row of {@link errorCodes}. */
export interface ErrorCodeInfo {
  /** Who must act. */
  readonly actor: ErrorActor;
  /** The error class that carries the code. */
  readonly errorClass: string;
  /** What happened, in one sentence. */
  readonly summary: string;
}

/**
 * Every stable error code turnlog throws, grouped by who must act, with the class that carries it.
 * A test keeps the table and the classes in `src/errors/` in step; docs/errors.md says what to do
 * for each.
 *
 * @example
 * try { await session.send("hi"); }
 * catch (error) {
 *   if (TurnlogError.isTurnlogError(error) && errorCodes[error.code].actor === "configuration") process.exit(2);
 * }
 */
export const errorCodes = {
  TURNLOG_CONFIG: {
    actor: "configuration",
    errorClass: "ConfigError",
    summary: "runtime options are invalid: an unknown key, a wrong type or value",
  },
  TURNLOG_MCP_SERVER: {
    actor: "configuration",
    errorClass: "McpServerError",
    summary: "an MCP server did not start, did not complete the handshake, or could not list its tools",
  },
  TURNLOG_SEAL_FILE: {
    actor: "configuration",
    errorClass: "SealFileError",
    summary: "a seal key or seal witness file cannot be used: readable by others, or not in its format",
  },
  TURNLOG_UNPARSABLE_COMMAND: {
    actor: "model",
    errorClass: "UnparsableCommandError",
    summary: "a shell command a shell would reject; the classifier turns it into approval:unparsable",
  },
  TURNLOG_PROVIDER_ERROR: {
    actor: "provider",
    errorClass: "ProviderError",
    summary: "the model provider failed; kind and retryable say how",
  },
  TURNLOG_LOG_NOT_FOUND: {
    actor: "configuration",
    errorClass: "LogNotFoundError",
    summary: "a log directory given to openLog holds no log (a reader never creates one)",
  },
  TURNLOG_LOG_LOCKED: {
    actor: "log",
    errorClass: "LogLockedError",
    summary: "the LevelDB log directory is open in another process or another handle",
  },
  TURNLOG_OWNER_CHANNEL: {
    actor: "log",
    errorClass: "OwnerChannelError",
    summary: "the process holding a LevelDB log did not take an answer through its owner channel",
  },
  TURNLOG_LOG_CORRUPTED: {
    actor: "log",
    errorClass: "LogCorruptedError",
    summary: "an event the log's index promises is missing, unreadable, or does not chain on",
  },
  TURNLOG_LOG_WRITE: {
    actor: "log",
    errorClass: "LogWriteError",
    summary: "the disk refused a write of the LevelDB log (no space left, an I/O error, a failed fsync); the append was not acknowledged",
  },
  TURNLOG_LOG_STALLED: {
    actor: "log",
    errorClass: "LogStalledError",
    summary: "a transaction left open on the PostgreSQL server held a reader of the global order back too long",
  },
  TURNLOG_LOG_UNAVAILABLE: {
    actor: "log",
    errorClass: "LogUnavailableError",
    summary: "the PostgreSQL server cannot be reached or used as this role: refused, timed out, connection lost, login refused, database missing, privilege denied",
  },
  TURNLOG_LOG_FORMAT: {
    actor: "log",
    errorClass: "LogFormatError",
    summary: "the log directory was written in a layout this turnlog does not read",
  },
  TURNLOG_UNEXPECTED_EVENT: {
    actor: "log",
    errorClass: "UnexpectedEventError",
    summary: "the log holds a turn event the turn machine does not accept where it stands",
  },
  TURNLOG_NO_DECISION_OWED: {
    actor: "log",
    errorClass: "NoDecisionOwedError",
    summary: "the log holds a decision the turn did not owe at that point",
  },
  TURNLOG_VERSION_CONFLICT: {
    actor: "host",
    errorClass: "ExpectedVersionConflictError",
    summary: "another writer appended first: the stream is not at the version the append expected",
  },
  TURNLOG_LOG_CLOSED: {
    actor: "host",
    errorClass: "LogClosedError",
    summary: "the log was used after it was closed",
  },
  TURNLOG_RUNTIME_CLOSED: {
    actor: "host",
    errorClass: "RuntimeClosedError",
    summary: "the runtime was closed: a wait it held ended, or an operation was asked for afterwards",
  },
  TURNLOG_SESSION_STATE: {
    actor: "host",
    errorClass: "SessionStateError",
    summary: "the session's state does not allow the operation (e.g. approving a call that is not held)",
  },
  TURNLOG_SESSION_BUSY: {
    actor: "host",
    errorClass: "SessionBusyError",
    summary: "another writer is driving the session (it holds the session's lease, or is in the middle of its turn); nothing was appended",
  },
  TURNLOG_EVENT_REFUSED: {
    actor: "host",
    errorClass: "EventRefusedError",
    summary: "the log refused an event a session built (data that is not JSON or not valid Unicode); nothing of it was written",
  },
  TURNLOG_UNKNOWN_SESSION: {
    actor: "host",
    errorClass: "UnknownSessionError",
    summary: "no session with that ID exists in the log",
  },
  TURNLOG_POSITION_OUT_OF_RANGE: {
    actor: "host",
    errorClass: "PositionOutOfRangeError",
    summary: "a stream position beyond the end of the session's stream",
  },
  TURNLOG_CLI: {
    actor: "person",
    errorClass: "CliError",
    summary: "a mistake of the CLI's user, or a failure a command reports on purpose",
  },
} as const satisfies Record<string, ErrorCodeInfo>;

/** A stable turnlog error code: a key of {@link errorCodes}. */
export type ErrorCode = keyof typeof errorCodes;

/**
 * Who must act on an error code; `undefined` for a code this copy of turnlog does not know (an
 * error from a newer copy of the package).
 *
 * @example
 * actorOf("TURNLOG_LOG_LOCKED"); // "log"
 */
export function actorOf(code: string): ErrorActor | undefined {
  return Object.hasOwn(errorCodes, code) ? errorCodes[code as ErrorCode].actor : undefined;
}

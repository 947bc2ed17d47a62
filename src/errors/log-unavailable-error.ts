import { hasCode, TurnlogError } from "./turnlog-error.js";

/**
 * Why a PostgreSQL log cannot be used (docs/errors.md, "The log"):
 *
 * - `unreachable`: no server answers at that address (connection refused, an unknown host name,
 *   no route, no Unix socket), or it is starting up or shutting down (SQLSTATE 57P03);
 * - `timeout`: the server did not answer within the connection or read timeout;
 * - `terminated`: the connection broke or the server ended it (a restart, `pg_terminate_backend`,
 *   an idle timeout; SQLSTATE class 08, 57P01, 57P02, 57P05, 25P03);
 * - `authentication`: the server refused the login (a wrong or missing password, an unknown role,
 *   no `pg_hba.conf` line; SQLSTATE class 28);
 * - `no-database`: the database named in the URL does not exist (SQLSTATE 3D000);
 * - `permission-denied`: the role may not use or create the log's schema or tables (SQLSTATE 42501);
 * - `overloaded`: the server is out of a resource (too many connections, a full disk; class 53);
 * - `tls`: the TLS (SSL) connection could not be set up;
 * - `protocol`: the server's reply broke the wire protocol.
 */
export type LogUnavailableKind =
  | "unreachable"
  | "timeout"
  | "terminated"
  | "authentication"
  | "no-database"
  | "permission-denied"
  | "overloaded"
  | "tls"
  | "protocol";

/**
 * A PostgreSQL log cannot be reached or used as the role it connects as: the server does not
 * answer, the connection broke, the login or a privilege was refused, or the database is missing.
 * Thrown by `PostgresEventLog.open`, `migratePostgres` and any later operation of an open log.
 * The message names the server without the URL's password, what failed and the SQLSTATE with its
 * condition name; the driver's or server's own error is the `cause`. An append that meets it may
 * have committed when the connection broke during its commit: read the stream's version before
 * appending again (an `expectedStreamVersion` makes the retry safe).
 *
 * @example
 * try { log = await PostgresEventLog.open(process.env.DATABASE_URL!); }
 * catch (error) {
 *   if (LogUnavailableError.isInstance(error) && error.kind === "authentication") console.error("check PGPASSWORD");
 *   throw error;
 * }
 */
export class LogUnavailableError extends TurnlogError {
  readonly code = "TURNLOG_LOG_UNAVAILABLE";

  constructor(
    /** Where the log is: the URL without its password, and the schema. */
    readonly location: string,
    /** What was being done: `open`, `migrate`, `appendToStream`, `readStream`, `readAll`, … */
    readonly operation: string,
    readonly kind: LogUnavailableKind,
    /** What the driver or server said, with any password taken out. */
    readonly reason: string,
    options: {
      /** The server's SQLSTATE (`28P01`), when it sent one. */
      sqlState?: string | undefined;
      /** The SQLSTATE's condition name (`invalid_password`), when it is known. */
      condition?: string | undefined;
      /** The system error code (`ECONNREFUSED`, `ENOTFOUND`), when the socket failed. */
      errno?: string | undefined;
      cause?: unknown;
    },
  ) {
    const state = options.sqlState === undefined ? "" : ` (SQLSTATE ${options.sqlState}${options.condition === undefined ? "" : ` ${options.condition}`})`;
    const what = operation === "open" || operation === "migrate" ? `cannot ${operation} the log at ${location}` : `the log at ${location} became unavailable during ${operation}`;
    super(`${what}: ${kindPhrases[kind]} — ${reason}${state}`, options.cause === undefined ? undefined : { cause: options.cause });
    this.sqlState = options.sqlState;
    this.condition = options.condition;
    this.errno = options.errno;
  }

  /** The server's SQLSTATE (`28P01`), when it sent one. */
  readonly sqlState: string | undefined;
  /** The SQLSTATE's condition name (`invalid_password`), when it is known. */
  readonly condition: string | undefined;
  /** The system error code (`ECONNREFUSED`, `ENOTFOUND`), when the socket failed. */
  readonly errno: string | undefined;

  static isInstance(value: unknown): value is LogUnavailableError {
    return hasCode(value, "TURNLOG_LOG_UNAVAILABLE");
  }
}

const kindPhrases: Record<LogUnavailableKind, string> = {
  unreachable: "the server cannot be reached",
  timeout: "the server did not answer in time",
  terminated: "the connection to the server was lost",
  authentication: "the server refused the login",
  "no-database": "the database does not exist",
  "permission-denied": "the role lacks a privilege the log needs",
  overloaded: "the server is out of a resource",
  tls: "the TLS (SSL) connection failed",
  protocol: "the server's reply broke the protocol",
};

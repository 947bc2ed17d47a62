import { createHash } from "node:crypto";
import path from "node:path";
import { defaultPostgresSchema, isPostgresLocation, type LogLocation } from "../log-location.js";
import { realPathOrResolved } from "../../util/state-directories.js";

/**
 * What names a log outside it — in a witness and in the seal key's records: `label`, for people
 * (a directory's real path, or a PostgreSQL address without credentials), and `name`, a file name
 * made of a readable part and the first 16 hex digits of the label's SHA-256 (unique).
 */
export interface LogIdentity {
  label: string;
  name: string;
}

/**
 * The identity of the log at `location`: for a directory, its real path (a deleted directory keeps
 * the name it had); for a PostgreSQL schema, the database's address without user or password
 * (host, port, database, the socket directory if one is given) and the schema — so every user and
 * every machine that reaches the same schema names the same log.
 *
 * @example
 * logIdentity({ dir: "/work/app/.turnlog" }); // { label: "/work/app/.turnlog", name: "turnlog-3f2a9c0d1e4b5a69" }
 */
export function logIdentity(location: LogLocation): LogIdentity {
  if (!isPostgresLocation(location)) {
    const real = realPathOrResolved(location.dir);
    const readable = path.basename(real).replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^[-.]+/, "").slice(0, 40) || "log";
    return { label: real, name: `${readable}-${digest(real)}` };
  }
  const label = postgresLogIdentity(location.url, location.schema ?? defaultPostgresSchema);
  const readable = label.replace(/^postgres:\/\//, "postgres-").replace(/ \(schema /, "-").replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^[-.]+|-+$/g, "").slice(0, 60) || "postgres";
  return { label, name: `${readable}-${digest(label)}` };
}

function digest(text: string): string {
  return createHash("sha256").update(text).digest("hex").slice(0, 16);
}

/**
 * What names a PostgreSQL log whoever reaches it: `postgres://host:port/database (schema s)`,
 * with the socket directory (`?host=`) when one is given, and never the user or the password.
 * A URL that does not parse is named by its hash alone.
 */
function postgresLogIdentity(url: string, schema: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `postgres://unparsable-${createHash("sha256").update(url).digest("hex").slice(0, 16)} (schema ${schema})`;
  }
  const socket = parsed.searchParams.get("host");
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, ""));
  return `postgres://${parsed.hostname}:${parsed.port === "" ? "5432" : parsed.port}/${database}${socket !== null ? `?host=${socket}` : ""} (schema ${schema})`;
}

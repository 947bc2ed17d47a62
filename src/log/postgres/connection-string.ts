/**
 * A PostgreSQL URL with its password taken out — of the user part and of a `password=` parameter
 * — fit to print and to paste: libpq then takes the password from `PGPASSWORD` or `~/.pgpass`.
 * A URL that does not parse is not echoed at all, since where its password starts is then unknown.
 *
 * @example
 * urlWithoutPassword("postgres://ada:s3cret@db:5432/agents?sslmode=require"); // "postgres://ada@db:5432/agents?sslmode=require"
 */
export function urlWithoutPassword(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "postgres://(a URL that does not parse)";
  }
  parsed.password = "";
  for (const key of [...parsed.searchParams.keys()]) {
    if (key.toLowerCase() === "password") parsed.searchParams.delete(key);
  }
  return parsed.toString();
}

/**
 * Whether a URL carries a password (in its user part or a `password=` parameter). A URL that does
 * not parse is assumed to.
 */
export function urlHasPassword(url: string): boolean {
  try {
    const parsed = new URL(url);
    return parsed.password !== "" || [...parsed.searchParams.keys()].some((key) => key.toLowerCase() === "password");
  } catch {
    return true;
  }
}

/**
 * The passwords a URL carries, as written and decoded, so that a message that somehow holds one
 * can be scrubbed of it. Empty for a URL without a password.
 */
export function urlPasswords(url: string): string[] {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // Unparsable: the text between "//user:" and the last "@" is the best guess.
    const guess = /^[a-z]+:\/\/[^:/@]*:(.*)@/i.exec(url)?.[1];
    return guess === undefined || guess === "" ? [] : [guess];
  }
  const found = new Set<string>();
  const add = (value: string) => {
    if (value === "") return;
    found.add(value);
    try {
      found.add(decodeURIComponent(value));
    } catch {
      // A malformed escape: the raw text is all there is to scrub.
    }
  };
  add(parsed.password);
  for (const [key, value] of parsed.searchParams) if (key.toLowerCase() === "password") add(value);
  return [...found];
}

/** Whether a `--log` value names a PostgreSQL database rather than a directory. */
export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value);
}

/** The settings of a node-postgres pool that say where it connects (its `options`). */
export interface PoolSettings {
  connectionString?: string | undefined;
  host?: string | undefined;
  port?: number | undefined;
  database?: string | undefined;
  user?: string | undefined;
  password?: unknown;
}

/**
 * Where a pool connects, for messages: its URL without the password, or `postgres://user@host:port/database`
 * from the settings it was given and the `PG…` variables node-postgres falls back on.
 *
 * @example
 * poolAddress({ host: "db.internal", database: "agents", user: "ada", password: "s3cret" }); // "postgres://ada@db.internal:5432/agents"
 */
export function poolAddress(settings: PoolSettings, env: NodeJS.ProcessEnv = process.env): string {
  if (typeof settings.connectionString === "string" && settings.connectionString !== "") return urlWithoutPassword(settings.connectionString);
  const user = settings.user ?? env.PGUSER;
  const host = settings.host ?? env.PGHOST ?? "localhost";
  const port = settings.port ?? env.PGPORT ?? 5432;
  const database = settings.database ?? env.PGDATABASE ?? user ?? "";
  return `postgres://${user === undefined || user === "" ? "" : `${encodeURIComponent(user)}@`}${host.includes("/") ? encodeURIComponent(host) : host}:${port}/${encodeURIComponent(database)}`;
}

/**
 * Every password a connection with these settings may log in with, so that a message quoting
 * the driver or the server can be scrubbed of it: the URL's, the pool's own `password`, and
 * `PGPASSWORD` (which node-postgres reads when neither gives one).
 */
export function connectionPasswords(settings: PoolSettings, env: NodeJS.ProcessEnv = process.env): string[] {
  const found = new Set<string>();
  if (typeof settings.connectionString === "string") for (const password of urlPasswords(settings.connectionString)) found.add(password);
  if (typeof settings.password === "string" && settings.password !== "") found.add(settings.password);
  if (env.PGPASSWORD !== undefined && env.PGPASSWORD !== "") found.add(env.PGPASSWORD);
  return [...found];
}

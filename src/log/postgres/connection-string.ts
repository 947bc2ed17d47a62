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

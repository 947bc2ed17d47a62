/**
 * A PostgreSQL URL fit to print: its password (in the user part or a `password=` parameter) is
 * replaced by `***`. A URL that does not parse is not echoed at all, since where its password
 * starts is then unknown.
 *
 * @example
 * redactConnectionString("postgres://ada:s3cret@db:5432/agents?sslmode=require");
 * // "postgres://ada:***@db:5432/agents?sslmode=require"
 */
export function redactConnectionString(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "postgres://(a URL that does not parse)";
  }
  if (parsed.password !== "") parsed.password = "***";
  for (const key of [...parsed.searchParams.keys()]) {
    if (key.toLowerCase() === "password") parsed.searchParams.set(key, "***");
  }
  return parsed.toString().replace(/%2A%2A%2A/g, "***");
}

/** Whether a `--log` value names a PostgreSQL database rather than a directory. */
export function isPostgresUrl(value: string): boolean {
  return /^postgres(ql)?:\/\//i.test(value);
}

import { writeFile } from "node:fs/promises";
import { jsonText } from "../terminal-text.js";
import type { ResolvedLogLocation } from "../../log/log-location.js";
import { otlpJson } from "../../otel/otlp-json.js";
import { sessionSpans } from "../../otel/span-derivation.js";
import { createLogReader } from "../../reader/index.js";
import type { CommandContext } from "../cli-io.js";
import { CliError, exitCodes } from "../../errors/cli-error.js";
import { readOnly, withLog } from "../log-directory.js";
import { readSessionEvents } from "../session-events.js";
import { describeThrown } from "../../util/json-value.js";

export interface OtelOptions {
  location: ResolvedLogLocation;
  out?: string;
  endpoint?: string;
  includeContent?: boolean;
  /** `name: value` or `name=value`, repeatable: headers of the POST (a vendor's API key). */
  header?: string[];
}

/** How long `--endpoint` waits for the collector's answer. */
const sendTimeoutMs = 15_000;

/**
 * The OTLP/HTTP URL of `--endpoint`: a URL without a path gets the traces path `/v1/traces`, as
 * collectors and the OTLP exporters' `OTEL_EXPORTER_OTLP_ENDPOINT` expect; one with a path is used
 * as it is (a vendor's own traces URL).
 *
 * @example
 * tracesUrl("http://127.0.0.1:4318"); // "http://127.0.0.1:4318/v1/traces"
 */
export function tracesUrl(endpoint: string): URL {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw new CliError(`--endpoint takes an http:// or https:// URL, e.g. http://127.0.0.1:4318 — not "${endpoint}"`, { exitCode: exitCodes.usage });
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new CliError(`--endpoint takes an http:// or https:// URL (OTLP/HTTP), not ${url.protocol}//…`, { exitCode: exitCodes.usage });
  }
  if (url.pathname === "/" || url.pathname === "") url.pathname = "/v1/traces";
  return url;
}

/**
 * The headers of the POST: `OTEL_EXPORTER_OTLP_HEADERS`, then `OTEL_EXPORTER_OTLP_TRACES_HEADERS`
 * (the OTLP exporters' variables: `name=value` pairs, comma-separated, values URL-encoded), then
 * each `--header`. Keeping a key in the environment keeps it out of the shell history.
 *
 * @example
 * exportHeaders({ OTEL_EXPORTER_OTLP_HEADERS: "api-key=abc%20def" }, ["x-team: blue"]);
 * // { "api-key": "abc def", "x-team": "blue" }
 */
export function exportHeaders(env: NodeJS.ProcessEnv, given: readonly string[] = []): Record<string, string> {
  const headers: Record<string, string> = {};
  const add = (pair: string, separator: RegExp, source: string) => {
    const match = separator.exec(pair);
    const name = match === null ? "" : pair.slice(0, match.index).trim();
    if (match === null || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
      throw new CliError(`${source}: a header is name=value or "name: value", e.g. "x-honeycomb-team: …"`, { exitCode: exitCodes.usage });
    }
    headers[name.toLowerCase()] = pair.slice(match.index + match[0].length).trim();
  };
  for (const variable of ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"]) {
    for (const pair of (env[variable] ?? "").split(",")) {
      if (pair.trim() === "") continue;
      const equals = pair.indexOf("=");
      let value: string;
      try {
        value = decodeURIComponent(pair.slice(equals + 1));
      } catch {
        throw new CliError(`${variable}: a value is not valid URL encoding`, { exitCode: exitCodes.usage });
      }
      add(`${pair.slice(0, Math.max(0, equals))}=${value}`, /=/, variable);
    }
  }
  for (const pair of given) add(pair, /\s*[:=]\s*/, "--header");
  return headers;
}

/** Where a URL points, without any password it carries. */
function shown(url: URL): string {
  const copy = new URL(url);
  if (copy.password !== "") copy.password = "***";
  return copy.toString();
}

/**
 * `turnlog otel <session>`: the session's spans (docs/observability.md, "Spans") as OTLP/JSON — to
 * stdout, to `--out`, or POSTed to an OTLP/HTTP `--endpoint`. Reads the log only; the same log
 * gives the same bytes (IDs are hashes of the session and each span's identity).
 */
export async function otelCommand(sessionId: string, options: OtelOptions, context: CommandContext): Promise<number> {
  const url = options.endpoint !== undefined ? tracesUrl(options.endpoint) : undefined;
  const events = await withLog(options.location, readOnly(context.io), (log) => readSessionEvents(createLogReader(log), sessionId, options.location, context.io.env));
  const spans = sessionSpans(events, { sessionId, includeContent: options.includeContent === true });
  const body = JSON.stringify(otlpJson(spans, { sessionId }));
  const count = `${spans.length} span${spans.length === 1 ? "" : "s"} of session ${sessionId}`;
  if (options.out !== undefined) {
    try {
      await writeFile(options.out, `${body}\n`);
    } catch (error) {
      throw new CliError(`cannot write ${options.out}: ${describeThrown(error)}`, { cause: error });
    }
    context.io.stderr.write(`wrote ${count} to ${options.out}\n`);
  }
  if (url !== undefined) {
    const status = await send(url, body, exportHeaders(context.io.env, options.header));
    if (status < 200 || status > 299) throw new CliError(`the OTLP endpoint ${shown(url)} answered HTTP ${status}: the spans were not accepted`);
    context.io.stderr.write(`sent ${count} to ${shown(url)}: HTTP ${status}\n`);
  }
  // On stdout, what a terminal would act on is \u-escaped: the same JSON value (docs/security.md).
  if (options.out === undefined && url === undefined) context.io.stdout.write(`${jsonText(JSON.parse(body))}\n`);
  return exitCodes.ok;
}

/** POSTs the OTLP/JSON body; returns the HTTP status, or throws a one-line error when none came back. */
async function send(url: URL, body: string, headers: Record<string, string>): Promise<number> {
  try {
    const response = await fetch(url, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body, signal: AbortSignal.timeout(sendTimeoutMs) });
    // Read to the end, so the connection is released before the process exits.
    await response.arrayBuffer().catch(() => undefined);
    return response.status;
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
    const code = (cause as { code?: unknown } | undefined)?.code;
    const reason = error instanceof Error && error.name === "TimeoutError" ? `no answer within ${sendTimeoutMs / 1000} s` : typeof code === "string" ? code : describeThrown(cause);
    throw new CliError(`could not send the spans to ${shown(url)}: ${reason}`, { cause: error });
  }
}

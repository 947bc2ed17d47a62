import { Command, CommanderError, Option, type OutputConfiguration } from "commander";
import { terminalText } from "./terminal-text.js";
import packageJson from "../../package.json" with { type: "json" };
import { TurnlogError } from "../errors/turnlog-error.js";
import { approverName, commandContext, type CliIo, type TextSink } from "./cli-io.js";
import { CliError, exitCodes } from "../errors/cli-error.js";
import type { AnswerOptions } from "./commands/approve-command.js";
import type { AuditOptions } from "./commands/audit-command.js";
import type { RunOptions } from "./commands/run-command.js";
import type { VerifyOptions } from "./commands/verify-command.js";
import type { OtelOptions } from "./commands/otel-command.js";
import type { ViewOptions } from "./commands/view-command.js";
import { isPostgresUrl, urlPasswords } from "../log/postgres/connection-string.js";
import type { ResolvedLogLocation } from "../log/log-location.js";
import { describeThrown } from "../util/json-value.js";

/**
 * Runs the `turnlog` command line and returns its exit code (docs/cli-run.md, "Exit codes"): 0
 * success, 1 failure (a divergence, a broken chain, a failed turn, or a mistake such as an unknown
 * session), 2 usage error, 3 a turn left awaiting approval, 4 a turn stopped (budget, cancel,
 * refusal), 5 `replay` could not replay the session. Every error
 * is one line on stderr; the stack of an unexpected one is shown only with `TURNLOG_DEBUG`.
 *
 * @example
 * process.exitCode = await runCli(process.argv.slice(2));
 */
export async function runCli(argv: readonly string[], given: CliIo = processIo()): Promise<number> {
  const io = withoutUrlPasswords(given, argv);
  const context = commandContext(io);
  let exitCode: number = exitCodes.ok;
  const program = buildProgram(io);
  // Each command names its log with --log (a directory or a postgres:// URL), or --dir (a
  // directory, the older flag), and --schema; the default is looked up only when neither is given
  // (a lookup reads the disk). The resolved location reaches the command as `options.location`.
  const defaultsText = {
    read: "$TURNLOG_LOG, else $TURNLOG_DIR, else this workspace's run log if there is one, else ./.turnlog",
    run: "$TURNLOG_LOG, else $TURNLOG_DIR, else this workspace's log in ~/.local/state/turnlog",
    demo: "$TURNLOG_LOG, else $TURNLOG_DIR, else ./.turnlog",
  } as const;
  const logOption = (kind: "read" | "run" | "demo" = "read") =>
    new Option("--log <dir|url>", `the log: a directory, or a PostgreSQL URL, postgres://user@host/db (keep the password in PGPASSWORD or ~/.pgpass); default: ${defaultsText[kind]}`);
  const dirOption = () => new Option("--dir <path>", "the log directory (the same as --log <path>)");
  const schemaOption = () => new Option("--schema <name>", "with a PostgreSQL log: the schema that holds it; default: $TURNLOG_SCHEMA, else turnlog");
  program.hook("preAction", async (_program, command) => {
    if (!command.options.some((option) => option.long === "--log") || namesItsOwnDirectory.has(command.name())) return;
    const name = command.name();
    const kind = name === "run" ? "run" : name === "demo" ? "demo" : name === "verify" ? "verify" : "read";
    // Loaded when a command runs, as its own module is: `turnlog --help` and `--version` load neither.
    const { resolveLocation } = await import("./resolve-location.js");
    try {
      command.setOptionValue("location", resolveLocation(command.opts(), io.env, kind));
    } catch (error) {
      // `verify --json` prints JSON whatever goes wrong, this too.
      if (kind !== "verify" || command.opts().json !== true) throw error;
      command.setOptionValue("locationError", error);
    }
  });
  const witnessOption = (what: string) => new Option("--witness <dir|url>", what);
  const jsonOption = () => new Option("--json", "print JSON instead of text");
  const byOption = () => new Option("--by <name>", "who answers, as the log records it").default(approverName(io.env), "$USER or cli");
  const noteOption = () => new Option("--note <text>", "why, as the log records it");

  // Each command returns its exit code and throws only on errors, which `reportError` turns into one line.
  // The table (names, options, help) is all that loads up front; an action imports its command's
  // module when it runs, so `--version`, `--help` and one command pay for no other command's code
  // (docs/performance.md, "Start-up").
  program
    .command("demo")
    .description("record a built-in scripted session (no network, no API key, no real files) and print its timeline")
    .addOption(logOption("demo"))
    .addOption(dirOption())
    .addOption(schemaOption())
    .option("--pause", "stop at the first call held for approval and print the commands that answer it (exit 3)")
    .action(async (options: { location: ResolvedLogLocation; pause?: boolean }) => {
      const { demoCommand } = await import("./commands/demo-command.js");
      exitCode = await demoCommand(options, context);
    });

  program
    .command("run")
    .description("run an agent session in this directory against a real model (OpenAI-compatible, Anthropic, or an AI SDK provider package), logged (see docs/cli-run.md)")
    .argument("<message...>", "what to ask the model (quote it, or give it as several words)")
    .addOption(new Option("--provider <kind>", "the API the endpoint speaks (default: openai)").choices(["openai", "anthropic"]))
    .option("--ai-sdk <package>", "instead of --provider: an AI SDK provider package installed in this directory, e.g. @ai-sdk/openai (the Responses API), @ai-sdk/anthropic, @ai-sdk/google; its key from the package's usual variable")
    .option("--base-url <url>", "the endpoint, e.g. http://localhost:11434/v1 for Ollama (default: the provider's hosted API)")
    .option("--model <name>", "the model name the endpoint knows")
    .option("--api-key-env <NAME>", "the NAME of the environment variable holding the key (default: OPENAI_API_KEY or ANTHROPIC_API_KEY; for --ai-sdk, the package's own, e.g. GOOGLE_GENERATIVE_AI_API_KEY)")
    .addOption(new Option("--mode <mode>", "the approval mode (default: ask)").choices(["ask", "auto-edit", "full-auto", "read-only"]))
    .option("--mcp <command>", 'an MCP server to start, e.g. --mcp "npx -y @modelcontextprotocol/server-filesystem ." (repeatable)', (value: string, previous: string[] | undefined) => [...(previous ?? []), value])
    .option("--session <id>", "continue this session with a new message, or create it under this ID")
    .option("--yes", "approve every call the gate holds (recorded as approved by --yes)")
    .option("--config <path>", "a config file instead of ./turnlog.config.json")
    .option("--trust-config", "confirm the config file's content as it is now: its settings apply, and it is remembered until the file changes (without a confirmation none of them applies)")
    .addOption(logOption("run"))
    .addOption(dirOption())
    .addOption(schemaOption())
    .addOption(witnessOption("keep the log's witness there — a directory, or an http(s) URL of an append-only witness service — out of the agent's reach (default: beside the seal key; see docs/security.md)"))
    .addHelpText("after", "\nExit codes: 0 completed · 1 failed · 2 usage error · 3 a turn awaits approval · 4 stopped (budget, cancel, refusal).")
    .action(async (message: string[], options: RunOptions) => {
      const { runCommand } = await import("./commands/run-command.js");
      exitCode = await runCommand(message, options, context);
    });

  program
    .command("sessions")
    .description("list the sessions in the log with their event count, last event and status")
    .addOption(logOption())
    .addOption(dirOption())
    .addOption(schemaOption())
    .addOption(jsonOption())
    .action(async (options: { location: ResolvedLogLocation; json?: boolean }) => {
      const { sessionsCommand } = await import("./commands/sessions-command.js");
      exitCode = await sessionsCommand(options, context);
    });

  program
    .command("events")
    .description("print a session's events as a timeline (or as recorded, with --json); --follow keeps printing new ones")
    .argument("<session>", "the session ID")
    .addOption(logOption())
    .addOption(dirOption())
    .addOption(schemaOption())
    .addOption(jsonOption())
    .option("--follow", "then print each new event as another process appends it, until Ctrl-C (with --json: one JSON object per line); never locks the log")
    .option("--interval <ms>", "with --follow on a log directory: how often to look for new events, in milliseconds (default 500); a PostgreSQL log tells of them itself")
    .action(async (session: string, options: { location: ResolvedLogLocation; json?: boolean; follow?: boolean; interval?: string }) => {
      const { eventsCommand } = await import("./commands/events-command.js");
      exitCode = await eventsCommand(session, options, context);
    });

  program
    .command("history")
    .description("print the provider-native history a next request would carry, rebuilt from the log, with its diagnostics")
    .argument("<session>", "the session ID")
    .requiredOption("--format <format>", "the provider format to write it in, by name (docs/providers.md lists them)")
    .option("--max-tokens <n>", "the token budget (default: the session's own)")
    .addOption(logOption())
    .addOption(dirOption())
    .addOption(schemaOption())
    .addOption(jsonOption())
    .action(async (session: string, options: { location: ResolvedLogLocation; format: string; maxTokens?: string; json?: boolean }) => {
      const { historyCommand } = await import("./commands/history-command.js");
      exitCode = await historyCommand(session, options, context);
    });

  program
    .command("show")
    .description("print a session's configuration, its turns with each call's decision, outcome and duration, and its status (or, with --at N, the state right after event #N)")
    .argument("<session>", "the session ID")
    .option("--at <position>", "time travel: the timeline up to stream position N and the state there")
    .option("--events", "also print every event (the full timeline)")
    .addOption(logOption())
    .addOption(dirOption())
    .addOption(schemaOption())
    .action(async (session: string, options: { location: ResolvedLogLocation; at?: string; events?: boolean }) => {
      const { showCommand } = await import("./commands/show-command.js");
      exitCode = await showCommand(session, options, context);
    });

  program
    .command("view")
    .description("serve a local page (127.0.0.1, a one-time token) with the sessions, a session's held calls (Approve / Deny / Edit), timeline, turn machine, audit, state at any position and replay verdict, updated live, until Ctrl-C; an answer is the only thing it writes")
    .argument("[session]", "open this session's page")
    .option("--port <port>", "the port on 127.0.0.1 (default: any free one)")
    .option("--interval <ms>", "with a log directory: how often to look for new events, in milliseconds (default 500); a PostgreSQL log tells of them itself")
    .addOption(logOption())
    .addOption(dirOption())
    .addOption(schemaOption())
    .action(async (session: string | undefined, options: ViewOptions) => {
      const { viewCommand } = await import("./commands/view-command.js");
      exitCode = await viewCommand(session, options, context);
    });

  program
    .command("witness")
    .description("keep seal witnesses for other machines' logs")
    .command("serve")
    .description("serve an append-only seal witness over HTTP (turnlog run --witness <url> records to it): records are only ever added, never replaced or removed; run it as another user or on another machine (docs/security.md)")
    .addOption(new Option("--log <dir>", "where the records are kept (the witness's own append-only log)"))
    .addOption(new Option("--dir <path>", "where the records are kept (the same as --log <dir>)"))
    .option("--host <address>", "the address to listen on (default: 127.0.0.1)")
    .option("--port <port>", "the port (default: any free one)")
    .action(async (options: { log?: string; dir?: string; host?: string; port?: string }) => {
      const dir = namedDirectory([["--log", options.log], ["--dir", options.dir]], "witness serve keeps its records in a directory: pass --log <dir> (or --dir <dir>)");
      const { witnessServeCommand } = await import("./commands/witness-command.js");
      exitCode = await witnessServeCommand({ ...options, dir }, context);
    });

  program
    .command("fork")
    .description("make a new session whose log starts with a copy of this one's events up to --at (its own hash chain)")
    .argument("<session>", "the session to fork")
    .requiredOption("--at <position>", "the last stream position to copy (one inside a provider request's decision moves back to before it)")
    .requiredOption("--to <session>", "the new session's ID (must not exist)")
    .addOption(logOption())
    .addOption(dirOption())
    .addOption(schemaOption())
    .action(async (session: string, options: { location: ResolvedLogLocation; at: string; to: string }) => {
      const { forkCommand } = await import("./commands/fork-command.js");
      exitCode = await forkCommand(session, options, context);
    });

  program
    .command("audit")
    .description("print one row per tool call: the gate's decision, its rule, who approved, and what finally happened")
    .argument("<session>", "the session ID")
    .addOption(new Option("--decision <decision>", "only calls the gate decided so").choices(["allow", "ask", "deny", "block"]))
    .option("--tool <name>", "only calls of this tool")
    .addOption(new Option("--outcome <outcome>", "only calls that ended so").choices(["succeeded", "failed", "rejected", "denied", "blocked", "interrupted", "pending"]))
    .addOption(logOption())
    .addOption(dirOption())
    .addOption(schemaOption())
    .addOption(jsonOption())
    .action(async (session: string, options: AuditOptions) => {
      const { auditCommand } = await import("./commands/audit-command.js");
      exitCode = await auditCommand(session, options, context);
    });

  program
    .command("otel")
    .description("write a session's OpenTelemetry GenAI spans (invoke_agent, chat, execute_tool) as OTLP/JSON, or send them to an OTLP/HTTP endpoint (docs/observability.md)")
    .argument("<session>", "the session ID")
    .option("--out <file>", "write the OTLP/JSON to this file instead of stdout")
    .option("--endpoint <url>", "POST the spans to this OTLP/HTTP endpoint (a URL without a path gets /v1/traces), e.g. http://127.0.0.1:4318")
    .option("--header <name:value>", "with --endpoint: a header of the POST, e.g. a vendor's API key (repeatable; $OTEL_EXPORTER_OTLP_HEADERS is read too)", (value: string, previous: string[] | undefined) => [...(previous ?? []), value])
    .option("--include-content", "also export tool arguments and results (as the log holds them: redacted, and scanned for secrets again)")
    .addOption(logOption())
    .addOption(dirOption())
    .addOption(schemaOption())
    .action(async (session: string, options: OtelOptions) => {
      const { otelCommand } = await import("./commands/otel-command.js");
      exitCode = await otelCommand(session, options, context);
    });

  program
    .command("replay")
    .description("recompute every decision of a session and compare it with the log (exit 1 on a divergence, 5 when it cannot replay the session)")
    .argument("<session>", "the session ID")
    .addOption(logOption())
    .addOption(dirOption())
    .addOption(schemaOption())
    .addOption(jsonOption())
    .addOption(new Option("--policy <file>", "what-if: a partial policy JSON merged over the recorded one; lists the decisions it would change (exit 1 if any)"))
    .addOption(
      new Option("--decisions <version>", "upgrade preview: recompute under this decisions version (`latest` or a number) instead of the recorded one; lists the decisions it would change (exit 1 if any)"),
    )
    .action(async (session: string, options: { location: ResolvedLogLocation; json?: boolean; policy?: string; decisions?: string }) => {
      const { replayCommand } = await import("./commands/replay-command.js");
      exitCode = await replayCommand(session, options, context);
    });

  program
    .command("approve")
    .description("approve a call any session holds for approval (a host's too, on either backend); its host — or `turnlog resume`, for a demo or run session — then runs it")
    .argument("<session>", "the session ID")
    .argument("<callId>", "the held call's ID (`demo`, `run`, `resume` and `show` print it)")
    .addOption(byOption())
    .addOption(noteOption())
    .addOption(new Option("--scope <scope>", "call: this call only; tool: also this tool for the rest of the session").choices(["call", "tool"]).default("call"))
    .addOption(new Option("--arguments <json>", "approve with edited arguments: a JSON object the call runs with instead (the gate decides again on them)"))
    .addOption(logOption())
    .addOption(dirOption())
    .addOption(schemaOption())
    .action(async (session: string, callId: string, options: AnswerOptions) => {
      const { approveCommand } = await import("./commands/approve-command.js");
      exitCode = await approveCommand(session, callId, options, context);
    });

  program
    .command("deny")
    .description("deny a call any session holds for approval (a host's too, on either backend); once the turn goes on, the model is told it did not run")
    .argument("<session>", "the session ID")
    .argument("<callId>", "the held call's ID (`demo`, `run`, `resume` and `show` print it)")
    .addOption(byOption())
    .addOption(noteOption())
    .addOption(logOption())
    .addOption(dirOption())
    .addOption(schemaOption())
    .action(async (session: string, callId: string, options: AnswerOptions) => {
      const { denyCommand } = await import("./commands/approve-command.js");
      exitCode = await denyCommand(session, callId, options, context);
    });

  program
    .command("resume")
    .description("continue a demo or run session's unfinished turn (exit 0 completed, 3 awaiting approval, 4 stopped, 1 failed)")
    .argument("<session>", "the session ID")
    .addOption(logOption())
    .addOption(dirOption())
    .addOption(schemaOption())
    .action(async (session: string, options: { location: ResolvedLogLocation }) => {
      const { resumeCommand } = await import("./commands/resume-command.js");
      exitCode = await resumeCommand(session, options, context);
    });

  program
    .command("migrate")
    .description("bring a PostgreSQL log's schema to this turnlog's version, creating its tables (a LevelDB directory needs no migration)")
    .addOption(logOption())
    .addOption(dirOption())
    .addOption(schemaOption())
    .addOption(jsonOption())
    .action(async (options: { location: ResolvedLogLocation; json?: boolean }) => {
      const { migrateCommand } = await import("./commands/migrate-command.js");
      exitCode = await migrateCommand(options, context);
    });

  program
    .command("verify")
    .description("check every hash chain and every seal in the log, and the log against its witness (exit 1 on tampering; an unsealed tail after a crash is not)")
    .addOption(logOption())
    .addOption(dirOption())
    .addOption(schemaOption())
    .addOption(jsonOption())
    .option("--public-key <file>", "also trust seals of this Ed25519 public key (PEM), e.g. a log sealed on another machine (repeatable)", (value: string, previous: string[] | undefined) => [...(previous ?? []), value])
    .addOption(witnessOption("the log's witness: a directory or an http(s) URL (default: the one `turnlog run --witness` recorded for this log, else the file beside the seal key)"))
    .action(async (options: VerifyOptions) => {
      const { verifyCommand } = await import("./commands/verify-command.js");
      exitCode = await verifyCommand(options, context);
    });

  program
    .command("repair")
    .description("salvage a damaged LevelDB log: copy each stream's events up to its first bad or missing one (chain-verified) into a new log, and report what was kept and dropped; the damaged log is never changed (exit 1 when events were dropped)")
    .argument("[log-dir]", "the damaged log directory (read from a copy); or give it as --log <dir> or --dir <dir>")
    .requiredOption("--out <new-dir>", "where to write the repaired log: a new or empty directory")
    .addOption(new Option("--log <dir>", "the damaged log directory (the same as the argument)"))
    .addOption(dirOption())
    .addOption(jsonOption())
    .action(async (argument: string | undefined, options: { out?: string; json?: boolean; log?: string; dir?: string }) => {
      const directory = namedDirectory([["<log-dir>", argument], ["--log", options.log], ["--dir", options.dir]], "repair needs the damaged log directory: turnlog repair <log-dir> --out <new-dir> (or --log <dir>)");
      if (isPostgresUrl(directory)) throw new CliError("repair salvages a damaged LevelDB log directory; a PostgreSQL log's storage is the database's to repair", { exitCode: exitCodes.usage });
      const { repairCommand } = await import("./commands/repair-command.js");
      exitCode = await repairCommand(directory, options, context);
    });

  // Each command's usage errors point at that command's own help.
  for (const command of program.commands) command.configureOutput(outputFor(io, `turnlog ${command.name()} --help`));

  try {
    await program.parseAsync([...argv], { from: "user" });
    return exitCode;
  } catch (error) {
    return reportError(error, io);
  }
}

/**
 * Commands that take `--log`/`--dir` but name a directory of their own rather than a log to
 * look up: `repair` (the damaged directory, never a default) and `witness serve` (its records).
 */
const namesItsOwnDirectory = new Set(["repair", "serve"]);

/** The one directory named by `ways` (an argument, `--log`, `--dir`); none or two is a usage error. */
function namedDirectory(ways: readonly (readonly [string, string | undefined])[], missing: string): string {
  const given = ways.filter((way): way is readonly [string, string] => way[1] !== undefined);
  if (given.length > 1) throw new CliError(`${given.map(([name]) => name).join(" and ")} both name the directory — give one of them`, { exitCode: exitCodes.usage });
  const named = given[0]?.[1];
  if (named === undefined || named === "") throw new CliError(missing, { exitCode: exitCodes.usage });
  return named;
}

/**
 * The streams with every password of a PostgreSQL URL given on the command line or in
 * `$TURNLOG_LOG` replaced by `***`. Messages are built without passwords in the first place; this
 * is the second line of defence, for text turnlog does not write itself (a database's or a
 * driver's error message, a stack trace with TURNLOG_DEBUG). The streams are untouched when no
 * URL carries a password.
 */
function withoutUrlPasswords(io: CliIo, argv: readonly string[]): CliIo {
  const urls = [...argv.map((word) => word.replace(/^--[a-z-]+=/, "")), io.env.TURNLOG_LOG ?? ""].filter(isPostgresUrl);
  const passwords = [...new Set(urls.flatMap(urlPasswords))].sort((a, b) => b.length - a.length);
  if (passwords.length === 0) return io;
  const scrub = (text: string) => passwords.reduce((scrubbed, password) => scrubbed.split(password).join("***"), text);
  const scrubbing = <Sink extends TextSink>(sink: Sink): Sink =>
    new Proxy(sink, {
      get(target, property) {
        if (property === "write") return (text: unknown, ...rest: unknown[]) => (target.write as (...args: unknown[]) => unknown)(typeof text === "string" ? scrub(text) : text, ...rest);
        const value: unknown = Reflect.get(target, property, target);
        return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
  // Copied property by property, so that a lazy `stdin` stays lazy.
  const scrubbed = Object.defineProperties({}, Object.getOwnPropertyDescriptors(io)) as CliIo;
  scrubbed.stdout = scrubbing(io.stdout);
  scrubbed.stderr = scrubbing(io.stderr);
  return scrubbed;
}

/** The real process's streams and environment; stdin is only touched when a command reads it. */
function processIo(): CliIo {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    env: process.env,
    get stdin() {
      return process.stdin;
    },
  };
}

/**
 * The root command. Commander's settings are inherited by subcommands created after them, so
 * they are made here, before any command is added: errors throw instead of exiting (the caller
 * must close the log first), and commander's own messages are squeezed into one line.
 */
function buildProgram(io: CliIo): Command {
  return new Command("turnlog")
    .description("Run agent sessions, and inspect, replay and verify turnlog event logs.")
    .version(packageJson.version, "-V, --version", "print the turnlog version")
    .exitOverride()
    .showSuggestionAfterError(true)
    .configureOutput(outputFor(io, "turnlog --help"))
    .addHelpText(
      "after",
      [
        "",
        "Exit codes: 0 ok · 1 failure (divergence, broken chain, failed turn, unknown session, missing log) · 2 usage error ·",
        "            3 a turn awaits approval · 4 a turn stopped (budget, cancel, refusal) · 5 replay could not replay the session.",
        'Start with "npx turnlog demo", then "npx turnlog sessions"; "npx turnlog demo --pause" lets you answer the approvals.',
      ].join("\n"),
    );
}

/** Commander's output, with its error messages squeezed into one `turnlog: …` line. */
function outputFor(io: CliIo, helpCommand: string): OutputConfiguration {
  return {
    writeOut: (text) => io.stdout.write(text),
    writeErr: (text) => io.stderr.write(text),
    outputError: (text, write) => write(`turnlog: ${oneLine(text.replace(/^error:\s*/, ""))} — see "${helpCommand}"\n`),
  };
}

/** One line, with what a terminal would act on shown escaped: an error message may quote the log or a provider. */
function oneLine(text: string): string {
  return terminalText(text.replace(/\s*\n\s*/g, " ").trim());
}

/** Maps anything thrown to an exit code, writing at most one line (plus a stack when debugging). */
function reportError(error: unknown, io: CliIo): number {
  if (error instanceof CommanderError) {
    // Help and version were printed on request; commander already wrote its own error line.
    if (error.code === "commander.helpDisplayed" || error.code === "commander.version") return exitCodes.ok;
    if (error.code === "commander.help") return error.exitCode === 0 ? exitCodes.ok : exitCodes.usage;
    return exitCodes.usage;
  }
  const debug = io.env.TURNLOG_DEBUG !== undefined && io.env.TURNLOG_DEBUG !== "" && io.env.TURNLOG_DEBUG !== "0";
  if (error instanceof CliError) {
    io.stderr.write(`turnlog: ${oneLine(error.message)}\n`);
    if (debug && error.cause instanceof Error) io.stderr.write(`${terminalText(error.cause.stack ?? "")}\n`);
    return error.exitCode;
  }
  const message = describeThrown(error);
  if (debug) {
    io.stderr.write(`turnlog: ${terminalText(error instanceof Error ? (error.stack ?? message) : message)}\n`);
  } else if (TurnlogError.isTurnlogError(error)) {
    // With its code, which docs/errors.md explains (a lost database connection, a damaged log, …).
    io.stderr.write(`turnlog: ${oneLine(message)} [${error.code}]\n`);
  } else {
    io.stderr.write(`turnlog: unexpected error: ${oneLine(message)} (set TURNLOG_DEBUG=1 for the stack trace)\n`);
  }
  return exitCodes.failure;
}

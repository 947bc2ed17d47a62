/**
 * Runs `turnlog <args>` inside the test's own process, through `runCli` — the function the bin
 * calls — with captured output: for tests about a command's logic, which need neither a new Node
 * process (about a second each) nor the built bundle. A few end-to-end tests keep running the
 * built bin ({@link runTurnlog}) to cover the bin, the bundle and real exit codes.
 *
 * The command runs with `cwd` as the working directory (relative paths such as `--dir log` resolve
 * against it) and with `env` as its environment, cleaned as {@link runTurnlog} cleans it. One call
 * runs at a time in a test process (the working directory is the process's), so calls are queued.
 *
 * A command that returns must leave no SIGINT or SIGTERM handler of its own behind (`turnlog run`
 * listens for Ctrl-C only while a turn runs): one left installed is removed and the call rejects.
 */
import { runCli } from "../../../src/cli/run-cli.js";
import type { TurnlogRun } from "./turnlog-bin.js";

export interface InProcessOptions {
  cwd: string;
  env?: Record<string, string | undefined>;
  /** What the command reads as its standard input (`turnlog run` reads answers from it). */
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean };
}

let queue: Promise<unknown> = Promise.resolve();

/** Resolves with the command's exit code and output; never rejects on a non-zero exit. */
export function runTurnlogInProcess(args: readonly string[], options: InProcessOptions): Promise<TurnlogRun> {
  const run = queue.then(() => runOnce(args, options));
  queue = run.catch(() => undefined);
  return run;
}

async function runOnce(args: readonly string[], options: InProcessOptions): Promise<TurnlogRun> {
  const env: Record<string, string | undefined> = { ...process.env, FORCE_COLOR: undefined, NO_COLOR: undefined, TURNLOG_DIR: undefined, TURNLOG_LOG: undefined, TURNLOG_SCHEMA: undefined, TURNLOG_DEBUG: undefined, ...options.env };
  for (const key of Object.keys(env)) if (env[key] === undefined) delete env[key];
  let stdout = "";
  let stderr = "";
  const previous = process.cwd();
  const handlersBefore = new Map(watchedSignals.map((signal) => [signal, process.listeners(signal)]));
  process.chdir(options.cwd);
  let code: number;
  try {
    code = await runCli(args, {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: (text: string) => (stderr += text) },
      env: env as NodeJS.ProcessEnv,
      ...(options.stdin === undefined ? {} : { stdin: options.stdin }),
    });
  } finally {
    process.chdir(previous);
  }
  for (const signal of watchedSignals) {
    const left = process.listeners(signal).filter((listener) => !handlersBefore.get(signal)?.includes(listener));
    for (const listener of left) process.off(signal, listener);
    if (left.length > 0) throw new Error(`turnlog ${args.join(" ")} returned with ${left.length} ${signal} handler(s) of its own still installed`);
  }
  return { code, stdout, stderr };
}

const watchedSignals = ["SIGINT", "SIGTERM"] as const;

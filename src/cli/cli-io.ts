import { painter, shouldColor, type Paint } from "./terminal-style.js";
import { jsonText } from "./terminal-text.js";

/** Something text can be written to, such as `process.stdout`. */
export interface TextSink {
  write(text: string): unknown;
}

/** Where a command writes and what it may read of its environment; `process` in production. */
export interface CliIo {
  stdout: TextSink & { isTTY?: boolean };
  stderr: TextSink;
  env: NodeJS.ProcessEnv;
  /** Where `turnlog run` reads a person's answers, when it is a terminal. */
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean };
}

/** What every command needs: its output, whether to color it, and a painter to match. */
export interface CommandContext {
  io: CliIo;
  color: boolean;
  paint: Paint;
  /** Writes one line to stdout. */
  print(line?: string): void;
}

/** The context commands run in, with colors decided once for stdout. */
export function commandContext(io: CliIo): CommandContext {
  const color = shouldColor(io.stdout, io.env);
  return {
    io,
    color,
    paint: painter(color),
    print: (line = "") => io.stdout.write(`${line}\n`),
  };
}

/**
 * Prints a value as pretty JSON, the shape every `--json` output shares; what a terminal would act on
 * is escaped as `\u` and four hex digits ({@link jsonText}), which leaves the value the same.
 */
export function printJson(context: CommandContext, value: unknown): void {
  context.io.stdout.write(`${jsonText(value, 2)}\n`);
}

/** Resolves on SIGINT (Ctrl-C) or SIGTERM. */
export function untilInterrupted(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve();
    };
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
}

/**
 * Who the log says answered at this terminal: `$USER`, else `cli`.
 *
 * @example
 * approverName({ USER: "alice" }); // "alice"
 */
export function approverName(env: NodeJS.ProcessEnv): string {
  const user = env.USER?.trim();
  return user !== undefined && user !== "" ? user : "cli";
}

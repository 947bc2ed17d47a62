/**
 * Runs the built `turnlog` bin inside a pseudo-terminal, as a person at a terminal does, with
 * util-linux `script -qec "<command>" /dev/null`: stdin and stdout of the bin are then a TTY. Each
 * answer is typed only once its prompt has appeared, so nothing depends on timing.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { quote } from "shell-quote";
import { processDeadlineMs, repoRoot, type TurnlogRun } from "./turnlog-bin.js";

/** What to type, and after which output. */
export interface TypedAnswer {
  /** The prompt to wait for (its n-th appearance for the n-th answer that waits for it). */
  after: RegExp;
  /** Typed followed by Enter. */
  type: string;
}

/** `script` and the ANSI sequences of a terminal: what the output is after they are taken out. */
export function plainTerminalText(text: string): string {
  return text.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, "").replace(/\r/g, "");
}

/**
 * Runs `turnlog <args>` in a pseudo-terminal in `cwd`, typing `answers` in order, and resolves with
 * its exit code and everything it printed (the terminal merges stdout and stderr into `stdout`).
 */
export function runTurnlogInTerminal(args: readonly string[], options: { cwd: string; env?: Record<string, string | undefined>; answers?: readonly TypedAnswer[]; timeoutMs?: number }): Promise<TurnlogRun> {
  const env: Record<string, string | undefined> = { ...process.env, FORCE_COLOR: undefined, NO_COLOR: "1", TURNLOG_DIR: undefined, TURNLOG_DEBUG: undefined, TERM: "xterm", ...options.env };
  for (const key of Object.keys(env)) if (env[key] === undefined) delete env[key];
  const command = quote([process.execPath, path.join(repoRoot, "bin", "turnlog.js"), ...args]);
  return new Promise((resolve, reject) => {
    const child = spawn("script", ["-qec", command, "/dev/null"], { cwd: options.cwd, env: env as NodeJS.ProcessEnv, stdio: ["pipe", "pipe", "pipe"] });
    const pending = [...(options.answers ?? [])];
    let output = "";
    let typedUpTo = 0;
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`turnlog in a terminal did not end within ${options.timeoutMs ?? processDeadlineMs} ms; it printed:\n${plainTerminalText(output)}`));
    }, options.timeoutMs ?? processDeadlineMs);
    const typeWhenPrompted = () => {
      const next = pending[0];
      if (next === undefined) return;
      // Only output after the last answer counts, so one prompt is answered once.
      const match = next.after.exec(plainTerminalText(output.slice(typedUpTo)));
      if (match === null) return;
      pending.shift();
      typedUpTo = output.length;
      child.stdin.write(`${next.type}\r`);
      typeWhenPrompted();
    };
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8");
      typeWhenPrompted();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8");
    });
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      child.stdin.destroy();
      resolve({ code: code ?? -1, stdout: plainTerminalText(output), stderr: "" });
    });
  });
}

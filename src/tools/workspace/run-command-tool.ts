import type { ChildProcess } from "node:child_process";
import { spawn } from "node:child_process";
import type { Writable } from "node:stream";
import { z } from "zod";
import type { ToolContext, ToolDefinition, ToolResult } from "../define-tool.js";
import { defineTool } from "../define-tool.js";
import type { ExceededLimit } from "./sandbox-limits.js";
import type { WrappedCommand } from "./command-sandbox.js";
import { HeadTailBuffer } from "./head-tail-buffer.js";
import { uncontainedEnvironment } from "./read-environment.js";
import { resolveWorkspacePath } from "./workspace-path.js";
import type { WorkspaceToolSettings } from "./workspace-tool-settings.js";
import { resultHeadroomChars } from "./workspace-tool-settings.js";
import { describeThrown } from "../../util/json-value.js";

/**
 * The runtime's own timeout for the call sits this far above the command's, so the command's
 * timeout fires first and the model gets the output so far; the runtime's is only a backstop.
 */
export const runtimeTimeoutMarginMs = 5_000;
/**
 * After the shell exits, how long its pipes may stay open (held by a process that left the
 * process group, e.g. with `setsid`) before the output is taken as it is.
 */
const pipeDrainMs = 2_000;

/** What `run_command` records of how the process ended. */
export interface CommandOutcome {
  exitCode: number | null;
  timedOut: boolean;
  /** The signal that ended the shell, if one did (`SIGKILL` after a timeout or a cancel). */
  signal: string | null;
  cancelled?: boolean;
  /** The sandbox bound the command ran into; it was killed with everything it started. */
  limitExceeded?: ExceededLimit;
  /** Protected paths (workspace-relative) the command created in the sandbox, which were removed. */
  protectedRemoved?: string[];
}

/** How often a contained command's process count is checked against its bound. */
const limitPollMs = 250;

/** A bound known from how the process ended: `SIGXFSZ` is the file size limit. */
function exceededFromSignal(signal: string | null, code: number | null): ExceededLimit | undefined {
  // The shell reports a child killed by SIGXFSZ (25) as exit 128 + 25.
  return signal === "SIGXFSZ" || code === 153 ? "file-size" : undefined;
}

function sandboxNotes(outcome: CommandOutcome): string {
  if (outcome.protectedRemoved === undefined) return "";
  return `the sandbox removed what the command created at protected paths (docs/security.md): ${outcome.protectedRemoved.join(", ")}\n`;
}

/**
 * `run_command({ command })`: runs `<shell> -c <command>` with the workspace root as its working
 * directory, standard input empty, and the environment of `settings.env` (secret-named variables
 * removed by default). It is a **command tool** — its text goes through command safety in the gate
 * — of class `destructive-local`, and `serial`. The shell starts a process group of its own; on
 * timeout or cancellation the whole group is killed (SIGKILL), and when the shell exits any process
 * it left running in the background is killed too, so nothing outlives the call. Standard output
 * and error are captured together, bounded to `maxOutputChars` (head and tail kept).
 *
 * Result: `{ ok: exitCode === 0, content: "exit N\n<output>", metadata: { exitCode, timedOut,
 * signal } }`; a timeout's content starts `timed out after N ms …`.
 *
 * Why `destructive-local`: a shell can delete, overwrite and reach the network, so it must not run
 * unasked in `ask` or `auto-edit` (a `workspace-write` class would let `auto-edit` run any command
 * in a trusted workspace, and a read-only class would let `ask` run `make` or `node x.js` unasked).
 * The gate blocks what command safety forbids in every mode, and asks for what needs approval even
 * in `full-auto`.
 *
 * @example
 * const runCommand = runCommandTool(settings);
 * // run_command({ command: "npm test" }) → { ok: true, content: "exit 0\n…", metadata: { exitCode: 0, timedOut: false, signal: null } }
 */
export function runCommandTool(settings: WorkspaceToolSettings): ToolDefinition {
  const seconds = Math.round(settings.commandTimeoutMs / 1000);
  return defineTool({
    name: "run_command",
    description: `Run a shell command (${settings.shell} -c) in the workspace root. Standard input is empty; standard output and error are returned together, with the exit code, at most ${settings.maxOutputChars} characters (beginning and end kept). The command is killed after ${seconds} s, with everything it started.${settings.sandbox !== undefined ? " It runs in a sandbox: only the workspace and /tmp are writable, there is no network, and nothing it starts outlives it." : ""}`,
    risk: "destructive-local",
    input: z.object({ command: z.string().min(1).describe("The shell command line to run.") }),
    command: (input) => input.command,
    ...(settings.sandbox !== undefined ? { contained: true } : {}),
    serial: true,
    timeoutMs: settings.commandTimeoutMs + runtimeTimeoutMarginMs,
    maxResultChars: settings.maxOutputChars + resultHeadroomChars,
    run: async (input, ctx) => {
      const cwd = resolveWorkspacePath(settings.root, ctx.workspace.root, ".");
      if (!cwd.ok) return { ok: false, content: cwd.message };
      return runShell(input.command, cwd.absolute, settings, ctx);
    },
  });
}

function runShell(command: string, cwd: string, settings: WorkspaceToolSettings, ctx: ToolContext): Promise<ToolResult> {
  const notRun: CommandOutcome = { exitCode: null, timedOut: false, signal: null, cancelled: true };
  if (ctx.signal.aborted) return Promise.resolve({ ok: false, content: "cancelled before the command started", metadata: { ...notRun } });
  return new Promise((resolve) => {
    const output = new HeadTailBuffer(settings.maxOutputChars);
    let child: ChildProcess;
    const sandbox = settings.sandbox;
    const usable = sandbox?.available();
    if (usable !== undefined && !usable.ok) {
      // Contained or not at all: a host that asked for a sandbox never gets an uncontained command.
      resolve({ ok: false, content: `not run: the command sandbox is not available (${usable.reason})`, metadata: { exitCode: null, timedOut: false, signal: null } });
      return;
    }
    let contained: WrappedCommand | undefined;
    try {
      contained = sandbox?.wrap({ shell: settings.shell, command, cwd, root: cwd, readOnly: [...settings.protectedPaths, ...(ctx.protectedPaths ?? [])], env: settings.env() });
      const spawned = contained ?? { file: settings.shell, args: ["-c", command], env: uncontainedEnvironment(settings.env(), ctx.clearance, cwd) };
      const inputs = contained?.inputs ?? [];
      // detached: the shell (or the sandbox holding it) leads a new process group, so its children can be killed with it.
      child = spawn(spawned.file, spawned.args, { cwd, env: spawned.env, detached: true, stdio: ["ignore", "pipe", "pipe", ...inputs.map(() => "pipe" as const)] });
      inputs.forEach((bytes, index) => {
        const input = child.stdio[3 + index] as Writable | null;
        input?.on("error", () => undefined); // EPIPE when the sandbox failed before reading it: its exit says why
        input?.end(bytes);
      });
    } catch (error) {
      contained?.finish?.(true);
      resolve({ ok: false, content: `could not start ${settings.shell}: ${describeThrown(error)}`, metadata: { exitCode: null, timedOut: false, signal: null } });
      return;
    }
    let timedOut = false;
    let cancelled = false;
    let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let drain: NodeJS.Timeout | undefined;
    let settled = false;

    const killGroup = () => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // ESRCH: the group is already gone.
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, settings.commandTimeoutMs);
    // A bound the kernel only refuses (a process limit makes fork fail) ends the command: it is
    // killed with everything it started, and the result says which bound it ran into.
    const watch = contained?.finish === undefined ? undefined : setInterval(() => {
      if (contained?.finish?.(false).exceeded !== undefined) killGroup();
    }, limitPollMs);
    watch?.unref();
    const onAbort = () => {
      cancelled = true;
      killGroup();
    };
    ctx.signal.addEventListener("abort", onAbort, { once: true });

    child.stdout?.setEncoding("utf8");
    child.stderr?.setEncoding("utf8");
    child.stdout?.on("data", (chunk: string) => output.append(chunk));
    child.stderr?.on("data", (chunk: string) => output.append(chunk));

    const finish = (result: ToolResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (watch !== undefined) clearInterval(watch);
      if (drain !== undefined) clearTimeout(drain);
      ctx.signal.removeEventListener("abort", onAbort);
      resolve(result);
    };
    const report = () => {
      const code = exited?.code ?? null;
      const signal = exited?.signal ?? null;
      const sandboxed = contained?.finish?.(true);
      const exceeded = sandboxed?.exceeded ?? exceededFromSignal(signal, code);
      const outcome: CommandOutcome = {
        exitCode: code,
        timedOut,
        signal,
        ...(cancelled ? { cancelled: true } : {}),
        ...(contained !== undefined && exceeded !== undefined ? { limitExceeded: exceeded } : {}),
        ...(sandboxed !== undefined && sandboxed.removed.length > 0 ? { protectedRemoved: [...sandboxed.removed] } : {}),
      };
      const text = sandboxNotes(outcome) + output.toString();
      if (outcome.limitExceeded !== undefined && !timedOut && !cancelled) {
        return finish({ ok: false, content: `killed: it exceeded the sandbox's ${outcome.limitExceeded.replace("-", " ")} limit\n${text}`, metadata: { ...outcome } });
      }
      if (timedOut) return finish({ ok: false, content: `timed out after ${settings.commandTimeoutMs} ms; the command and everything it started were killed\n${text}`, metadata: { ...outcome } });
      if (cancelled) return finish({ ok: false, content: `cancelled; the command and everything it started were killed\n${text}`, metadata: { ...outcome } });
      const status = code !== null ? `exit ${code}` : `killed by ${signal ?? "a signal"}`;
      return finish({ ok: code === 0, content: `${status}\n${text}`, metadata: { ...outcome } });
    };

    child.on("error", (error) => {
      killGroup();
      finish({ ok: false, content: `could not run the command with ${settings.shell}: ${error.message}`, metadata: { exitCode: null, timedOut, signal: null } });
    });
    child.on("exit", (code, signal) => {
      if (settled) return;
      exited = { code, signal };
      // Whatever the shell left running in the background dies with the call, so nothing keeps
      // the workspace busy (or the pipes open) after the result is in.
      killGroup();
      drain = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        report();
      }, pipeDrainMs);
    });
    child.on("close", (code, signal) => {
      exited ??= { code, signal };
      report();
    });
  });
}

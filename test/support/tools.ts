import { z } from "zod";
import { defineTool } from "../../src/index.js";

/** A tiny in-memory workspace with the tools a test needs, and a record of what ran. */
export function workspace(initial: Record<string, string> = { "a.txt": "alpha", "b.txt": "beta" }) {
  const files = new Map(Object.entries(initial));
  const ran: string[] = [];
  const readFile = defineTool({
    name: "read_file",
    description: "Read a file",
    risk: "read-only-local",
    input: z.object({ path: z.string() }),
    paths: ({ path }) => [path],
    run: ({ path }) => {
      ran.push(`read_file ${path}`);
      const content = files.get(path);
      if (content === undefined) throw new Error(`no such file: ${path}`);
      return content;
    },
  });
  const writeFile = defineTool({
    name: "write_file",
    description: "Write a file",
    risk: "workspace-write",
    input: z.object({ path: z.string(), content: z.string() }),
    paths: ({ path }) => [path],
    run: ({ path, content }) => {
      ran.push(`write_file ${path}`);
      files.set(path, content);
      return `wrote ${content.length} characters to ${path}`;
    },
  });
  return { files, ran, tools: [readFile, writeFile], readFile, writeFile };
}

/** A clock that advances one millisecond per reading: deterministic, and durations are non-zero. */
export function steppingClock(start = Date.UTC(2026, 0, 1)) {
  let now = start;
  return { now: () => (now += 1) };
}

/** Sequential IDs. */
export function sequentialIds(prefix = "id") {
  let next = 0;
  return { next: () => `${prefix}-${(next += 1)}` };
}

/**
 * A command tool that runs nothing: the gate judges its `command` text like any shell's, and
 * `ran` records what a real shell would have run (for decisions about commands without their effects).
 * `contained` declares it sandboxed, as `workspaceTools({ sandbox })` declares `run_command`.
 */
export function fakeShell(options: { contained?: boolean } = {}) {
  const ran: string[] = [];
  const runCommand = defineTool({
    name: "run_command",
    description: "Run a shell command",
    risk: "destructive-local",
    input: z.object({ command: z.string() }),
    command: ({ command }) => command,
    ...(options.contained === true ? { contained: true } : {}),
    serial: true,
    run: ({ command }) => {
      ran.push(command);
      return `ran: ${command}`;
    },
  });
  return { ran, runCommand };
}

/**
 * An `external-side-effect` tool, `deploy({ version })`, that records the ID of each call it runs in
 * `ran`, calls `onStart` once it runs, and answers only after `hold` settles (at once without one):
 * what a test needs to see a side effect run once, or to hold it mid-run while something races it.
 */
export function deployTool(ran: string[], options: { hold?: Promise<unknown>; onStart?: () => void } = {}) {
  return defineTool({
    name: "deploy",
    description: "Deploy a version",
    risk: "external-side-effect",
    input: z.object({ version: z.string() }),
    run: async ({ version }, context) => {
      ran.push(context.callId);
      options.onStart?.();
      await options.hold;
      return `deployed ${version}`;
    },
  });
}

/** A tool, `slow`, that cancels the send it runs in (aborts `controller`) and then waits for the abort. */
export function cancellingTool(controller: AbortController) {
  return defineTool({
    name: "slow",
    description: "waits",
    risk: "read-only-local",
    input: z.object({}),
    run: (_input, ctx) =>
      new Promise((_resolve, reject) => {
        controller.abort();
        ctx.signal.addEventListener("abort", () => reject(new Error("aborted")));
      }),
  });
}

/**
 * A `transfer` tool whose `needsApproval` (decisions version 7) asks a person about amounts over
 * 100 and fails on 13 (to show a failing predicate asks); `ran` records each run. The tool of
 * `test/fixtures/logs/v7-needs-approval-session.json`.
 */
export function transferTool(ran: string[] = []) {
  return defineTool({
    name: "transfer",
    description: "Move money between the user's own accounts",
    risk: "workspace-write",
    input: z.object({ amount: z.number() }),
    needsApproval: ({ amount }) => {
      if (amount === 13) throw new Error("the limits service refused to judge 13");
      return amount > 100;
    },
    run: ({ amount }, context) => {
      ran.push(`${context.callId} ${amount}`);
      return `moved ${amount}`;
    },
  });
}

import { spawn } from "node:child_process";
import type { ChildProcessByStdio } from "node:child_process";
import { fileURLToPath } from "node:url";
import path from "node:path";
import type { Readable } from "node:stream";

/** The repository root, so that a child resolves `tsx` and `level` from its node_modules. */
const repositoryRoot = fileURLToPath(new URL("../..", import.meta.url));

/** A TypeScript script under test/support, run by a separate Node process. */
export interface LogChildProcess {
  child: ChildProcessByStdio<null, Readable, Readable>;
  /** Complete stdout lines received so far. */
  lines: string[];
  /** Resolves once a stdout line satisfies `predicate` (rejects if the child exits first). */
  waitForLine(predicate: (line: string, index: number) => boolean): Promise<void>;
  /** Resolves with the exit code or signal once the child has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stderr(): string;
}

/** Starts `node --import tsx test/support/<script> ...args` from the repository root. */
export function startLogChild(script: string, args: readonly string[]): LogChildProcess {
  return startNodeChild(["--import", "tsx", path.join(repositoryRoot, "test/support", script)], args);
}

/**
 * Starts `node <nodeArguments> ...args` from the repository root: a script under tsx, or one
 * bundled ahead of time to plain JavaScript (the `kill` soak family, which starts thousands),
 * with `env` (default: this process's).
 */
export function startNodeChild(nodeArguments: readonly string[], args: readonly string[], env?: NodeJS.ProcessEnv): LogChildProcess {
  const child = spawn(process.execPath, [...nodeArguments, ...args], {
    cwd: repositoryRoot,
    ...(env !== undefined ? { env } : {}),
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: string[] = [];
  let partial = "";
  let errors = "";
  const waiters = new Set<() => void>();
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    const parts = (partial + chunk).split("\n");
    partial = parts.pop() ?? "";
    lines.push(...parts);
    for (const wake of [...waiters]) wake();
  });
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => {
    errors += chunk;
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on("exit", (code, signal) => {
      for (const wake of [...waiters]) wake();
      resolve({ code, signal });
    });
  });
  function waitForLine(predicate: (line: string, index: number) => boolean): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (lines.some(predicate)) {
          waiters.delete(check);
          resolve();
        } else if (child.exitCode !== null || child.signalCode !== null) {
          waiters.delete(check);
          reject(new Error(`the child exited before the expected output; stderr:\n${errors}`));
        }
      };
      waiters.add(check);
      check();
    });
  }
  return { child, lines, waitForLine, exited, stderr: () => errors };
}

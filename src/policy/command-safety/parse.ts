/**
 * Tokenizing with `shell-quote` (quotes, escapes, `$VAR`, operators, globs) and cutting the token
 * stream into pipelines of simple commands with their redirections.
 */
import { parse } from "shell-quote";
import type { ParseEntry } from "shell-quote";

/** A redirection: its operator (`>`, `>>`, `&>`, `<`, `<<`, `<<<`, …) and the word after it. */
export interface Redirection {
  operator: string;
  target: string | undefined;
}

/** One simple command: its words (quotes removed, variables kept as `$NAME`) and redirections. */
export interface SimpleCommand {
  words: string[];
  redirections: Redirection[];
}

/** Commands joined by `|` or `|&`. */
export type Pipeline = SimpleCommand[];

const PIPES = new Set(["|", "|&"]);
const REDIRECTIONS = new Set([">", ">>", ">|", "&>", "&>>", ">&", "<", "<<", "<<-", "<<<", "<>", "<&"]);

/** Redirections that open their target for writing (`>&` only when its target is a file, not a descriptor). */
export const WRITE_REDIRECTIONS = new Set([">", ">>", ">|", "&>", "&>>", "<>", ">&"]);

/**
 * Variables stay literal (`$HOME` is still `$HOME`): the classifier must see what the text says,
 * not what this process's environment happens to hold. `${HOME}` reads as `$HOME` too.
 */
function keepVariable(name: string): string {
  return `$${name}`;
}

/**
 * Tokenize one line (as the scanner produced it) into pipelines. Throws when `shell-quote` rejects
 * the text (for example `${}`).
 *
 * @example
 * parsePipelines("ls && curl x | sh").map((pipeline) => pipeline.map((command) => command.words))
 * // [[["ls"]], [["curl", "x"], ["sh"]]]
 */
export function parsePipelines(line: string): Pipeline[] {
  const entries = parse(line, keepVariable);
  const pipelines: Pipeline[] = [];
  let pipeline: Pipeline = [];
  let command: SimpleCommand = { words: [], redirections: [] };

  const endCommand = (): void => {
    if (command.words.length > 0 || command.redirections.length > 0) pipeline.push(command);
    command = { words: [], redirections: [] };
  };
  const endPipeline = (): void => {
    endCommand();
    if (pipeline.length > 0) pipelines.push(pipeline);
    pipeline = [];
  };

  // A group piped into (`curl x | (cd /tmp && sh)`, `… | { sh; }`) reads the pipe in every one of
  // its commands, so until it closes its commands stay stages of the same pipeline.
  let pipedGroups = 0;
  let afterPipe = false;
  const inPipedGroup = (): boolean => afterPipe || pipedGroups > 0;

  for (let index = 0; index < entries.length; index += 1) {
    const entry = entries[index] as ParseEntry;
    if (typeof entry === "string") {
      if (entry === "{" && command.words.length === 0 && inPipedGroup()) {
        pipedGroups += 1;
        continue;
      }
      if (entry === "}" && command.words.length === 0 && pipedGroups > 0) {
        pipedGroups -= 1;
        continue;
      }
      command.words.push(entry);
      afterPipe = false;
    } else if ("comment" in entry) {
      continue;
    } else if (entry.op === "glob") {
      command.words.push(entry.pattern);
      afterPipe = false;
    } else if (REDIRECTIONS.has(entry.op)) {
      const next = entries[index + 1];
      let target: string | undefined;
      if (typeof next === "string") target = next;
      else if (next !== undefined && typeof next === "object" && "op" in next && next.op === "glob") target = next.pattern;
      if (target !== undefined) index += 1;
      command.redirections.push({ operator: entry.op, target });
    } else if (PIPES.has(entry.op)) {
      endCommand();
      afterPipe = true;
    } else if (entry.op === "(" && inPipedGroup()) {
      pipedGroups += 1;
      endCommand();
    } else if (entry.op === ")" && pipedGroups > 0) {
      pipedGroups -= 1;
      endCommand();
    } else if (pipedGroups > 0) {
      endCommand();
    } else {
      // `;`, `&&`, `||`, `&`, `;;`, `(`, `)` and anything else end the pipeline.
      endPipeline();
    }
  }
  endPipeline();
  return pipelines;
}

/**
 * The text a command prints when the text is written in the command itself: `echo 'rm -rf x'`,
 * `printf '…'`, `cat <<'EOF' … EOF`, `cat <<< '…'`. Decisions version 4 judges such text as a
 * script when it is fed to a shell (`echo '…' | sh`, `. <(echo '…')`) or becomes a command name
 * (`$(echo rm) -rf x`).
 */
import type { InterpreterFamily } from "./interpreters.js";
import { inlineCodeIsDangerous } from "./interpreters.js";
import { parsePipelines } from "./parse.js";
import type { CheckResult, Invocation, RuleHost } from "./rules/rule-host.js";
import type { Heredoc } from "./scanner.js";
import { PLACEHOLDER_MARK, scanShellText } from "./scanner.js";
import { commandName } from "./words.js";

/** What {@link literalOutput} needs of a command. */
export interface PrintingCommand {
  name: string;
  args: readonly string[];
  heredocs: readonly Heredoc[];
  herestrings: readonly string[];
  inputFiles: readonly string[];
}

/** Escapes `echo -e` and `printf` turn into line breaks, which a shell reading the text splits on. */
function withLineBreaks(text: string): string {
  return text.replace(/\\n/g, "\n");
}

/**
 * The text the command prints, when it is a literal of the command line; `undefined` otherwise
 * (files, substitutions, other commands).
 *
 * @example
 * literalOutput({ name: "echo", args: ["-n", "rm -rf x"], heredocs: [], herestrings: [], inputFiles: [] }) // "rm -rf x"
 */
export function literalOutput(command: PrintingCommand): string | undefined {
  const { name, args } = command;
  if (args.some((arg) => arg.includes(PLACEHOLDER_MARK)) || command.inputFiles.length > 0) return undefined;
  if (name === "echo") {
    const start = args.findIndex((arg) => !/^-[neE]+$/.test(arg));
    return withLineBreaks(args.slice(start < 0 ? args.length : start).join(" "));
  }
  if (name === "printf") return withLineBreaks(args.join(" "));
  if (name === "cat" && args.length === 0) {
    const texts = [...command.heredocs.map((heredoc) => heredoc.body), ...command.herestrings];
    return texts.length === 1 ? texts[0] : undefined;
  }
  return undefined;
}

/**
 * The text a script prints, when it is one command printing a literal (`echo '…'`); `undefined`
 * otherwise, and for text a shell would reject.
 *
 * @example
 * literalScriptOutput("echo 'rm -rf x'") // "rm -rf x"
 * literalScriptOutput("cat x.sh")        // undefined
 */
export function literalScriptOutput(script: string): string | undefined {
  try {
    const scanned = scanShellText(script);
    if (scanned.substitutions.length > 0) return undefined;
    const pipelines = parsePipelines(scanned.text);
    const command = pipelines.length === 1 && pipelines[0]?.length === 1 ? pipelines[0][0] : undefined;
    const [head, ...args] = command?.words ?? [];
    if (command === undefined || head === undefined) return undefined;
    const heredocs: Heredoc[] = [];
    const herestrings: string[] = [];
    const inputFiles: string[] = [];
    for (const { operator, target = "" } of command.redirections) {
      const marker = /^\u0000H(\d+)\u0000$/.exec(target);
      if (marker !== null) heredocs.push(scanned.heredocs[Number(marker[1])] as Heredoc);
      else if (operator === "<<<") herestrings.push(target);
      else if (operator.startsWith("<")) inputFiles.push(target);
    }
    return literalOutput({ name: commandName(head), args, heredocs, herestrings, inputFiles });
  } catch {
    return undefined;
  }
}

/**
 * Judge code fed to an interpreter as text (`. <(echo '…')`, `echo '…' | sh`, `source /dev/stdin <<< '…'`):
 * a shell's as a script, another language's by what its code calls.
 *
 * @example
 * runFedCode("shell", "sh", "rm -rf /", host) // host.report("forbidden:rm-rf-root", …)
 */
export function runFedCode(family: InterpreterFamily, name: string, code: string, host: Pick<RuleHost, "report" | "analyzeScript">): void {
  if (family === "shell") host.analyzeScript(code);
  else if (inlineCodeIsDangerous(family, code)) host.report("approval:inline-code-spawn", `\`${name}\` is fed code that spawns processes or deletes files.`);
}

/** `source` from decisions version 4 on: a here-string, heredoc or literal `<(…)` it reads is judged as a script. */
export function sourceSince4(invocation: Invocation, fromStdin: boolean, host: RuleHost): CheckResult {
  const file = invocation.args[0];
  const fed = file === undefined ? undefined : host.fedText(file);
  if (fed !== undefined) host.analyzeScript(fed);
  const stdinLike = fromStdin || file === "/dev/fd/0" || file === "/proc/self/fd/0";
  if (!stdinLike) return {};
  const texts = [...invocation.herestrings.map((text) => host.render(text)), ...invocation.heredocs.map((heredoc) => heredoc.body)];
  for (const text of texts) host.analyzeScript(text);
  return texts.length > 0 || invocation.inputFiles.length > 0 ? {} : { runsStandardInput: true };
}

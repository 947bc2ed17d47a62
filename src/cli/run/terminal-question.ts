import { createInterface } from "node:readline";

/**
 * Asks one question on a terminal and resolves with the line typed, or `undefined` when the person
 * ends input (Ctrl-D) or interrupts (Ctrl-C). A readline interface lives only for the question: in
 * between, the terminal is left as it was, so Ctrl-C while the model works is a real SIGINT (which
 * cancels the turn) and typing does not echo into the streamed text.
 *
 * @example
 * const answer = await askInTerminal(process.stdin, process.stdout, "approve? [y/n/a] › ");
 */
export function askInTerminal(input: NodeJS.ReadableStream, output: NodeJS.WritableStream, prompt: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const readline = createInterface({ input, output, terminal: true });
    let settled = false;
    const settle = (answer: string | undefined) => {
      if (settled) return;
      settled = true;
      readline.close();
      resolve(answer);
    };
    readline.on("line", (line) => settle(line));
    readline.on("close", () => settle(undefined));
    readline.on("SIGINT", () => {
      output.write("^C\n");
      settle(undefined);
    });
    readline.setPrompt(prompt);
    readline.prompt();
  });
}

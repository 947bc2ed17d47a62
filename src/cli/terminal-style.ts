import { styleText } from "node:util";
import type { AuditOutcome } from "../reader/index.js";

/** The few looks the CLI uses; each maps to `node:util` text formats. */
export type Tone = "dim" | "bold" | "input" | "decision" | "good" | "warn" | "bad" | "accent";

const formats = {
  dim: "dim",
  bold: "bold",
  input: "cyan",
  decision: "magenta",
  good: "green",
  warn: "yellow",
  bad: "red",
  accent: ["bold", "cyan"],
} as const satisfies Record<Tone, Parameters<typeof styleText>[0]>;

/** Paints text in a tone, or returns it unchanged. */
export type Paint = (tone: Tone, text: string) => string;

/**
 * A painter: ANSI styles when `color` is on, the identity otherwise. The caller decides `color`
 * (see {@link shouldColor}), so formatting stays a pure function of its inputs.
 *
 * @example
 * const paint = painter(false);
 * paint("bad", "failed"); // "failed"
 */
export function painter(color: boolean): Paint {
  if (!color) return (_tone, text) => text;
  // validateStream: false because the caller already decided; Node 20 ignores the option anyway.
  return (tone, text) => (text === "" ? text : styleText(formats[tone], text, { validateStream: false }));
}

/**
 * Whether to color what goes to `stream`: only a terminal, never when `NO_COLOR` is set
 * (https://no-color.org), always when `FORCE_COLOR` asks for it.
 */
export function shouldColor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== "" && env.FORCE_COLOR !== "0") return true;
  return stream.isTTY === true && env.TERM !== "dumb";
}

/** How an audit outcome is colored wherever it is printed (`turnlog audit`, `turnlog show`). */
export const outcomeTones: Readonly<Record<AuditOutcome, Tone>> = {
  succeeded: "good",
  failed: "bad",
  rejected: "bad",
  denied: "bad",
  blocked: "bad",
  interrupted: "warn",
  pending: "warn",
};

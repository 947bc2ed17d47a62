/** Small helpers for reading command-line words the way the commands themselves do. */
import path from "node:path";
import { PLACEHOLDER_MARK } from "./scanner.js";

/** Options of one command: short letters and long names that take a value in the next word. */
export interface OptionSpec {
  /** Short option letters that take a value (`-u root`, or attached `-uroot`). */
  short?: string;
  /** Long options that take a value in the next word when written without `=` (`--user root`). */
  long?: readonly string[];
}

/**
 * The index of the first operand (positional word) in `args`, skipping options and their values,
 * stopping after `--`.
 *
 * @example
 * firstOperand(["-n", "-u", "root", "rm", "-rf", "/"], { short: "u" }) // 3
 */
export function firstOperand(args: readonly string[], spec: OptionSpec = {}): number {
  let index = 0;
  while (index < args.length) {
    const arg = args[index] as string;
    if (arg === "--") return index + 1;
    if (arg.startsWith("--")) {
      index += !arg.includes("=") && (spec.long ?? []).includes(arg) ? 2 : 1;
      continue;
    }
    if (arg.startsWith("-") && arg.length > 1) {
      let consumed = 1;
      for (let letter = 1; letter < arg.length; letter += 1) {
        if ((spec.short ?? "").includes(arg[letter] as string)) {
          if (letter === arg.length - 1) consumed = 2;
          break;
        }
      }
      index += consumed;
      continue;
    }
    return index;
  }
  return index;
}

/**
 * The operands of a command whose options may come anywhere (GNU style): every word that is not an
 * option or an option's value; everything after `--` is an operand.
 *
 * @example
 * operands(["-rf", "a", "--", "-b"]) // ["a", "-b"]
 */
export function operands(args: readonly string[], spec: OptionSpec = {}): string[] {
  const result: string[] = [];
  let index = 0;
  while (index < args.length) {
    const arg = args[index] as string;
    if (arg === "--") {
      result.push(...args.slice(index + 1));
      break;
    }
    if (arg.startsWith("--")) {
      index += !arg.includes("=") && (spec.long ?? []).includes(arg) ? 2 : 1;
    } else if (arg.startsWith("-") && arg.length > 1) {
      const valueAt = [...arg.slice(1)].findIndex((letter) => (spec.short ?? "").includes(letter));
      index += valueAt === arg.length - 2 ? 2 : 1;
    } else {
      result.push(arg);
      index += 1;
    }
  }
  return result;
}

/** Short option letters present in `args`, from bundles like `-rfv` (not from `--long` options). */
export function shortLetters(args: readonly string[], valueLetters = ""): Set<string> {
  const letters = new Set<string>();
  for (const arg of args) {
    if (arg === "--") break;
    if (!/^-[A-Za-z0-9]+$/.test(arg)) continue;
    for (const letter of arg.slice(1)) {
      letters.add(letter);
      if (valueLetters.includes(letter)) break;
    }
  }
  return letters;
}

/** True when `args` (before `--`) contain one of the long options, bare or with `=value`. */
export function hasLong(args: readonly string[], ...names: string[]): boolean {
  for (const arg of args) {
    if (arg === "--") return false;
    if (names.some((name) => arg === name || arg.startsWith(`${name}=`))) return true;
  }
  return false;
}

/**
 * Like {@link hasLong}, but also true for any abbreviation GNU getopt would accept (`--rec` for
 * `--recursive`, `--for=x` for `--force`). Ambiguity is not checked: an over-match fails closed.
 *
 * @example
 * hasLongAbbreviated(["--rec", "--for", "/"], "--recursive") // true
 */
export function hasLongAbbreviated(args: readonly string[], ...names: string[]): boolean {
  for (const arg of args) {
    if (arg === "--") return false;
    if (!arg.startsWith("--") || arg.length < 3) continue;
    const written = arg.split("=", 1)[0] as string;
    if (names.some((name) => name.startsWith(written))) return true;
  }
  return false;
}

/** The value of an option written `-x value`, `-xvalue`, `--long value` or `--long=value`. */
export function optionValues(args: readonly string[], short: readonly string[], long: readonly string[]): string[] {
  const values: string[] = [];
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index] as string;
    if (arg === "--") break;
    const next = args[index + 1];
    for (const name of long) {
      if (arg === name && next !== undefined) values.push(next);
      else if (arg.startsWith(`${name}=`)) values.push(arg.slice(name.length + 1));
    }
    for (const name of short) {
      if (arg === name && next !== undefined) values.push(next);
      else if (arg.startsWith(name) && arg.length > name.length && !arg.startsWith("--")) values.push(arg.slice(name.length));
    }
  }
  return values;
}

/** `NAME=value` (or `NAME+=value`) before a command: a variable assignment, not the command. */
export const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*\+?=/;

/** The command a word names: `/bin/rm` and `./rm` are `rm`. */
export function commandName(word: string): string {
  return word.includes("/") && !word.endsWith("/") ? path.posix.basename(word) : word;
}

/** True when a command word's name is only known at run time (`$(…)`, `` `…` ``, `$CMD`). */
export function isDynamicName(word: string): boolean {
  const name = commandName(word);
  return name.includes(PLACEHOLDER_MARK) || name.includes("$");
}

/**
 * A word as it may appear inside a reason sentence: on one line, at most 60 characters.
 *
 * @example
 * brief("a\nb") // "a b"
 */
export function brief(word: string): string {
  const line = word.replace(/\s+/g, " ");
  return line.length > 60 ? `${line.slice(0, 59)}…` : line;
}

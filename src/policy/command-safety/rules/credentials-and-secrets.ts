/**
 * Rules of the credentials-and-secrets family (docs/policy.md#command-safety, docs/policy.md#secrets): reading a credential file,
 * printing secret environment variables, printing an access token.
 */
import { isCredentialPath } from "../paths.js";
import { brief, operands, optionValues } from "../words.js";
import type { Invocation, RuleHost } from "./rule-host.js";

/** Commands that name files without showing their contents (listing, testing, permissions, moving, deleting). */
export const DOES_NOT_READ: ReadonlySet<string> = new Set([
  "ls", "echo", "printf", "stat", "test", "[", "[[", "touch", "mkdir", "which", "type", "basename", "dirname",
  "realpath", "readlink", "du", "tree", "wc", "file", "chmod", "chown", "chgrp", "rm", "mv", "find", "cd",
  "pushd", "ln", "tee", "ssh", "ssh-add", "ssh-keygen", "ssh-copy-id", "export", "local", "declare", "readonly",
  "unset", "trap", "true", "false", ":",
]);
const GREP_FAMILY = new Set(["grep", "egrep", "fgrep", "rg", "ag", "ack", "git-grep"]);
const COPY_FAMILY = new Set(["cp", "scp", "rsync", "install"]);

function credentialCandidates(word: string): string[] {
  const candidates = [word];
  const equals = word.indexOf("=");
  if (equals >= 0) candidates.push(word.slice(equals + 1));
  const at = word.lastIndexOf("@");
  if (at >= 0) candidates.push(word.slice(at + 1));
  const colon = word.lastIndexOf(":");
  if (colon >= 0) candidates.push(word.slice(colon + 1));
  return candidates;
}

/** Any command that reads a credential file (by argument or `<`); runs before every other rule. */
export function checkCredentialRead(invocation: Invocation, host: RuleHost): void {
  const { name, args } = invocation;
  for (const file of invocation.inputFiles) {
    if (isCredentialPath(file, host.decisionsVersion)) {
      host.report("approval:credential-read", `\`${name}\` reads ${brief(file)}, which holds credentials.`);
      return;
    }
  }
  if (DOES_NOT_READ.has(name)) return;
  let words = args;
  if (GREP_FAMILY.has(name)) {
    // The first operand of grep is its pattern, unless -e/-f gave one; a pattern is not a file.
    const patternGiven = args.some((arg) => /^-[A-Za-z]*[ef]/.test(arg) || arg.startsWith("--regexp") || arg.startsWith("--file"));
    const patterns = new Set(optionValues(args, ["-e"], ["--regexp"]));
    const files = operands(args, { short: "efmABCdDgtTjM", long: ["--regexp", "--file", "--max-count", "--glob", "--type", "--context"] });
    words = (patternGiven ? files : files.slice(1)).filter((word) => !patterns.has(word));
    words.push(...optionValues(args, ["-f"], ["--file"]));
  } else if (COPY_FAMILY.has(name)) {
    // The last operand of a copy is where it writes, not what it reads.
    words = operands(args, { short: "tSeP", long: ["--target-directory", "--suffix"] }).slice(0, -1);
  }
  const file = words.find((word) => credentialCandidates(word).some((candidate) => isCredentialPath(candidate, host.decisionsVersion)));
  if (file !== undefined) host.report("approval:credential-read", `\`${name}\` reads ${brief(file)}, which holds credentials.`);
}

/** Variable names treated as secrets (docs/policy.md#secrets: `*_KEY`, `*_TOKEN`, `*_SECRET`, `*_PASSWORD`, …). */
const SECRET_VARIABLE = /\$\{?((?:[A-Za-z_][A-Za-z0-9_]*_)?(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?))(?![A-Za-z0-9_])/i;

/** `printenv`, bare `export`/`set`/`declare -p`, or `echo $API_KEY`. */
export function checkEnvironmentDump(invocation: Invocation, host: RuleHost): void {
  const { name, args } = invocation;
  if (name === "echo" || name === "printf") {
    const secret = args.map((arg) => SECRET_VARIABLE.exec(arg)?.[1]).find((variable) => variable !== undefined);
    if (secret !== undefined) host.report("approval:environment-dump", `\`${name}\` prints $${secret}, a secret.`);
  }
  const dumps =
    name === "printenv" ||
    (name === "export" && (args.length === 0 || args.every((arg) => arg === "-p"))) ||
    ((name === "declare" || name === "typeset") && args.length > 0 && args.every((arg) => /^-[px]+$/.test(arg))) ||
    (name === "set" && args.length === 0);
  if (dumps) host.report("approval:environment-dump", `\`${name}\` prints environment variables, secrets included.`);
}

/** `gh auth token`, `gcloud auth print-access-token`, … */
export function checkTokenPrint(invocation: Invocation, host: RuleHost): void {
  const { name, args } = invocation;
  const words = operands(args);
  const prints =
    (name === "gh" && words[0] === "auth" && (words[1] === "token" || (words[1] === "status" && (args.includes("-t") || args.includes("--show-token"))))) ||
    (name === "gcloud" && words.some((word) => word === "print-access-token" || word === "print-identity-token")) ||
    (name === "az" && words[0] === "account" && words[1] === "get-access-token") ||
    (name === "heroku" && words[0] === "auth:token") ||
    (name === "doctl" && words[0] === "auth" && words[1] === "token");
  if (prints) host.report("approval:token-print", `\`${name}\` prints an access token.`);
}

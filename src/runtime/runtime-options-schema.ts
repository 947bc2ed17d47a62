import { closest, distance } from "fastest-levenshtein";
import { z } from "zod";
import { ApprovalModeSchema } from "../contracts/policy.js";
import { ProviderFormatSchema } from "../contracts/provider.js";
import { RiskClassSchema } from "../contracts/risk.js";
import { isKnownDecisionsVersion, latestDecisionsVersion } from "../core/decision-versions.js";
import { ConfigError } from "../errors/config-error.js";
import { registrationPhases } from "../tools/tool-registry.js";

/*
 * The shape of what a host passes to `createRuntime`, checked before anything starts. These
 * schemas are for host input only: they reject unknown keys so a typo (`approvalmode`) is an
 * error instead of a silently ignored option. The schemas that parse recorded events
 * (src/contracts) stay as lenient as they were, so every old log keeps parsing.
 */

const fn = z.custom<(...args: never[]) => unknown>((value) => typeof value === "function", { error: "expected a function" });
/** An object the runtime calls into (a log, a provider, a clock): only the members it uses are checked. */
const withMethods = (...methods: string[]) =>
  z.custom<object>(
    (value) => typeof value === "object" && value !== null && methods.every((method) => typeof (value as Record<string, unknown>)[method] === "function"),
    { error: `expected an object with ${methods.map((method) => `${method}()`).join(", ")}` },
  );
const positiveInt = z.number().int().positive();
const milliseconds = z.number().nonnegative().refine(Number.isFinite, { error: "expected a finite number of milliseconds" });

const PolicyRuleInputSchema = z.strictObject({
  tool: z.string().optional(),
  risk: RiskClassSchema.optional(),
  reason: z.string().optional(),
});

/** `RuntimeOptions.policy`: every field optional, merged over the defaults (docs/embedding.md). */
export const PolicyInputSchema = z.strictObject({
  approvalMode: ApprovalModeSchema.optional(),
  workspace: z.strictObject({ root: z.string().min(1).optional(), trusted: z.boolean().optional() }).optional(),
  deny: z.array(PolicyRuleInputSchema).optional(),
  allow: z.array(PolicyRuleInputSchema).optional(),
  blockedRiskClasses: z.array(RiskClassSchema).optional(),
  protectedNames: z.array(z.string().min(1).regex(/^[^\\/]+$/, { error: "expected a file or directory name, not a path" })).optional(),
  approvalTimeoutMs: positiveInt.optional(),
});

/** `RuntimeOptions.budgets`: partial overrides of the defaults. */
export const BudgetsInputSchema = z.strictObject({
  maxIterations: positiveInt.optional(),
  maxToolCalls: positiveInt.optional(),
  maxRepeatedFailures: positiveInt.optional(),
  wallClockMs: positiveInt.optional(),
  maxToolCallsPerTurn: positiveInt.optional(),
});

/** `RuntimeOptions.provider`: the members the runtime uses (an adapter may carry more). */
export const ProviderInputSchema = z.looseObject({
  id: z.string().min(1),
  format: ProviderFormatSchema,
  complete: fn,
});

/** Every option `createRuntime` knows; any other top-level key is a mistake. */
export const RuntimeOptionsSchema = z.strictObject({
  log: withMethods("appendToStream", "readStream", "close").optional(),
  provider: ProviderInputSchema,
  tools: z.array(z.looseObject({ name: z.string().min(1), run: fn })).optional(),
  toolProviders: z
    .array(z.looseObject({ name: z.string().min(1), phase: z.enum(registrationPhases.filter((phase) => phase !== "mcp") as [string, ...string[]]), register: fn }))
    .optional(),
  mcpServers: z.array(z.looseObject({ name: z.string().min(1) })).optional(),
  policy: PolicyInputSchema.optional(),
  budgets: BudgetsInputSchema.optional(),
  concurrency: positiveInt.optional(),
  providerAttempts: positiveInt.optional(),
  providerRetry: z.strictObject({ baseDelayMs: milliseconds.optional(), maxDelayMs: milliseconds.optional() }).optional(),
  clock: withMethods("now")
    .refine((clock) => !("monotonic" in clock) || clock.monotonic === undefined || typeof clock.monotonic === "function", { error: "expected clock.monotonic to be a function" })
    .refine((clock) => !("sleep" in clock) || clock.sleep === undefined || typeof clock.sleep === "function", { error: "expected clock.sleep to be a function" })
    .optional(),
  ids: withMethods("next").optional(),
  history: z
    .strictObject({ maxTokens: positiveInt.optional(), system: z.string().optional(), compressor: z.looseObject({ name: z.string().min(1), summarize: fn }).optional() })
    .optional(),
  onDelta: fn.optional(),
  onAttemptDiscarded: fn.optional(),
  maxStoredOutputChars: positiveInt.optional(),
  decisionsVersion: z
    .number()
    .refine(isKnownDecisionsVersion, { error: `expected a decisions version this turnlog knows (1 to ${latestDecisionsVersion})` })
    .optional(),
  upgradeSessions: z.enum(["on-resume", "never"]).optional(),
  seals: z.looseObject({ key: z.custom<object>((value) => typeof value === "object" && value !== null, { error: "expected a seal key" }) }).optional(),
  // The message never quotes the value: it is a secret.
  secrets: z.array(z.string().min(8, { error: "a secret must be at least 8 characters (a shorter one would redact ordinary words)" })).optional(),
  sessionLease: z.enum(["fail", "off"]).optional(),
  autoResume: z.union([z.boolean(), z.strictObject({ onOutcome: fn.optional(), onError: fn.optional() })]).optional(),
  tracer: withMethods("startSpan").optional(),
  traceContent: z.boolean().optional(),
  maxOpenSessions: positiveInt.optional(),
  snapshots: z.union([z.literal(false), z.strictObject({ every: positiveInt.optional() })]).optional(),
});

/** Where an issue is, as a host would write it: `policy.deny[0].tool`. */
function pathText(path: readonly PropertyKey[]): string {
  let text = "";
  for (const key of path) text += typeof key === "number" ? `[${key}]` : `${text === "" ? "" : "."}${String(key)}`;
  return text;
}

/** The known keys of the object schema at `path`, for a "did you mean" hint. */
function knownKeysAt(path: readonly PropertyKey[]): string[] {
  let schema: z.ZodType | undefined = RuntimeOptionsSchema;
  for (const key of path) {
    while (schema instanceof z.ZodOptional) schema = schema.unwrap() as z.ZodType;
    if (schema instanceof z.ZodArray) schema = schema.element as z.ZodType;
    else if (schema instanceof z.ZodObject) schema = (schema.shape as Record<string, z.ZodType>)[String(key)];
    else return [];
  }
  while (schema instanceof z.ZodOptional) schema = schema.unwrap() as z.ZodType;
  return schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
}

/** The closest known key, if it is near enough to be what was meant (a typo, another case). */
function suggestion(key: string, known: readonly string[]): string | undefined {
  if (known.length === 0) return undefined;
  const sameLetters = known.find((candidate) => candidate.toLowerCase() === key.toLowerCase());
  if (sameLetters !== undefined) return sameLetters;
  const nearest = closest(key, [...known]);
  return distance(key, nearest) <= Math.max(2, Math.floor(key.length / 3)) ? nearest : undefined;
}

/** One readable line per problem zod found. */
function problemsOf(error: z.ZodError): string[] {
  const problems: string[] = [];
  for (const issue of error.issues) {
    const at = pathText(issue.path);
    if (issue.code === "unrecognized_keys") {
      const known = knownKeysAt(issue.path);
      for (const key of issue.keys) {
        const meant = suggestion(key, known);
        problems.push(`${pathText([...issue.path, key])}: unknown option${meant !== undefined ? ` (did you mean ${meant}?)` : ""}`);
      }
      continue;
    }
    const stripped = issue.message.replace(/^Invalid input: /, "");
    const message = stripped.charAt(0).toLowerCase() + stripped.slice(1);
    problems.push(`${at === "" ? "options" : at}: ${message}`);
  }
  return problems;
}

/**
 * Checks a host's `createRuntime` options, throwing a `ConfigError` that lists every problem, one
 * line each. Defaults are not applied here: `undefined` means "use the default".
 *
 * @example
 * checkRuntimeOptions({ provider, budgets: { maxIteration: 10 } });
 * // ConfigError: budgets.maxIteration: unknown option (did you mean maxIterations?)
 */
export function checkRuntimeOptions(options: unknown): void {
  // An option set to `undefined` is an option left out (hosts spread optional values).
  const present = typeof options === "object" && options !== null ? Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) : options;
  const result = RuntimeOptionsSchema.safeParse(present);
  if (!result.success) throw new ConfigError(problemsOf(result.error));
}

import type { ToolDefinition } from "../tools/define-tool.js";
import type { ToolProvider } from "../tools/tool-registry.js";
import { createRuntime, type Runtime, type RuntimeOptions } from "./create-runtime.js";

/** An option's value as its setter takes it: never `undefined` (leave the option out instead). */
type OptionValue<Key extends keyof RuntimeOptions> = NonNullable<RuntimeOptions[Key]>;

/**
 * One setter per option of {@link RuntimeOptions}, derived from its keys: `withX(value)` for option
 * `x`, and the listener options (`onDelta`, `onAttemptDiscarded`) under their own name. The builder
 * implements this type, so an option added to `RuntimeOptions` without its setter does not compile.
 */
export type RuntimeOptionSetters = {
  [Key in keyof RuntimeOptions as Key extends `on${string}` ? Key : `with${Capitalize<Key>}`]-?: (value: OptionValue<Key>) => AgentLoopBuilder;
};

/**
 * Composes a runtime step by step, for hosts that assemble their agent loop from parts: one setter
 * for every option of `createRuntime` (each named after it: `withLog`, `withProvider`,
 * `withMcpServers`, `withDecisionsVersion`, `onDelta`, …). The lists (`withTools`,
 * `withToolProviders`, `withMcpServers`, `withSecrets`) add to what was given before; `withPolicy`,
 * `withBudgets` and `withHistory` merge over it; the other setters replace it. `build()` is
 * `createRuntime(builder.options())`.
 *
 * @example
 * const runtime = await new AgentLoopBuilder()
 *   .withLog(await LevelEventLog.open(".turnlog"))
 *   .withProvider(provider)
 *   .withTools([readFile, writeFile])
 *   .withToolProvider({ name: "skills", phase: "post-skill-visibility", register: ({ add }) => add(skillTool) })
 *   .withPolicy({ approvalMode: "auto-edit", workspace: { root: process.cwd(), trusted: true } })
 *   .withBudgets({ maxIterations: 20 })
 *   .build();
 */
export class AgentLoopBuilder implements RuntimeOptionSetters {
  #options: Partial<RuntimeOptions> = {};

  #set<Key extends keyof RuntimeOptions>(key: Key, value: RuntimeOptions[Key]): this {
    this.#options = { ...this.#options, [key]: value };
    return this;
  }

  withLog(log: OptionValue<"log">): this {
    return this.#set("log", log);
  }

  withProvider(provider: OptionValue<"provider">): this {
    return this.#set("provider", provider);
  }

  withTool(tool: ToolDefinition): this {
    return this.withTools([tool]);
  }

  /** Adds to the tools given before. */
  withTools(tools: OptionValue<"tools">): this {
    return this.#set("tools", [...(this.#options.tools ?? []), ...tools]);
  }

  /** Adds a provider that registers tools in its phase (after MCP tools and `withTools`). */
  withToolProvider(provider: ToolProvider): this {
    return this.withToolProviders([provider]);
  }

  /** Adds to the tool providers given before. */
  withToolProviders(providers: OptionValue<"toolProviders">): this {
    return this.#set("toolProviders", [...(this.#options.toolProviders ?? []), ...providers]);
  }

  /** Adds to the MCP servers given before. */
  withMcpServers(servers: OptionValue<"mcpServers">): this {
    return this.#set("mcpServers", [...(this.#options.mcpServers ?? []), ...servers]);
  }

  /** Merged over what was given before, and over the defaults. */
  withPolicy(policy: OptionValue<"policy">): this {
    const before = this.#options.policy ?? {};
    return this.#set("policy", { ...before, ...policy, workspace: { ...before.workspace, ...policy.workspace } });
  }

  /** Partial budgets, merged over what was given before and over the defaults. */
  withBudgets(budgets: OptionValue<"budgets">): this {
    return this.#set("budgets", { ...this.#options.budgets, ...budgets });
  }

  withConcurrency(concurrency: OptionValue<"concurrency">): this {
    return this.#set("concurrency", concurrency);
  }

  withProviderAttempts(attempts: OptionValue<"providerAttempts">): this {
    return this.#set("providerAttempts", attempts);
  }

  withProviderRetry(retry: OptionValue<"providerRetry">): this {
    return this.#set("providerRetry", retry);
  }

  withClock(clock: OptionValue<"clock">): this {
    return this.#set("clock", clock);
  }

  withIds(ids: OptionValue<"ids">): this {
    return this.#set("ids", ids);
  }

  /** Merged over what was given before (a budget set once survives a later `withHistory({ system })`). */
  withHistory(history: OptionValue<"history">): this {
    return this.#set("history", { ...this.#options.history, ...history });
  }

  onDelta(listener: OptionValue<"onDelta">): this {
    return this.#set("onDelta", listener);
  }

  onAttemptDiscarded(listener: OptionValue<"onAttemptDiscarded">): this {
    return this.#set("onAttemptDiscarded", listener);
  }

  withMaxStoredOutputChars(chars: OptionValue<"maxStoredOutputChars">): this {
    return this.#set("maxStoredOutputChars", chars);
  }

  withDecisionsVersion(version: OptionValue<"decisionsVersion">): this {
    return this.#set("decisionsVersion", version);
  }

  withUpgradeSessions(upgrade: OptionValue<"upgradeSessions">): this {
    return this.#set("upgradeSessions", upgrade);
  }

  withSeals(seals: OptionValue<"seals">): this {
    return this.#set("seals", seals);
  }

  /** Adds to the secrets given before. */
  withSecrets(secrets: OptionValue<"secrets">): this {
    return this.#set("secrets", [...(this.#options.secrets ?? []), ...secrets]);
  }

  withSessionLease(lease: OptionValue<"sessionLease">): this {
    return this.#set("sessionLease", lease);
  }

  withAutoResume(autoResume: OptionValue<"autoResume">): this {
    return this.#set("autoResume", autoResume);
  }

  withTracer(tracer: OptionValue<"tracer">): this {
    return this.#set("tracer", tracer);
  }

  withTraceContent(traceContent: OptionValue<"traceContent">): this {
    return this.#set("traceContent", traceContent);
  }

  withMaxOpenSessions(maxOpenSessions: OptionValue<"maxOpenSessions">): this {
    return this.#set("maxOpenSessions", maxOpenSessions);
  }

  withSnapshots(snapshots: OptionValue<"snapshots">): this {
    return this.#set("snapshots", snapshots);
  }

  /**
   * The options `build()` passes to `createRuntime`: what was set, and nothing else (an option
   * never set is absent, so `createRuntime`'s default applies).
   */
  options(): RuntimeOptions {
    const { provider, ...rest } = this.#options;
    if (provider === undefined) throw new TypeError("AgentLoopBuilder needs a provider: call withProvider(provider) first");
    return { ...rest, provider };
  }

  build(): Promise<Runtime> {
    return createRuntime(this.options());
  }
}

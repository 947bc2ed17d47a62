import type { Budgets } from "../contracts/budgets.js";
import type { PolicyInput } from "../contracts/policy.js";
import type { Clock, EventLog, IdSource } from "../log/event-log.js";
import type { Provider } from "../providers/provider.js";
import type { ToolDefinition } from "../tools/define-tool.js";
import type { ToolProvider } from "../tools/tool-registry.js";
import { createRuntime, type Runtime, type RuntimeOptions } from "./create-runtime.js";

/**
 * Composes a runtime step by step — log, provider, tools and phased tool providers, policy,
 * budgets — for hosts that assemble their agent loop from parts. `build()` wires the registry
 * (phase by phase), planner, gate, runner, native executor and turn loop exactly as
 * `createRuntime` does.
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
export class AgentLoopBuilder {
  #log: EventLog | undefined;
  #provider: Provider | undefined;
  readonly #tools: ToolDefinition[] = [];
  readonly #toolProviders: ToolProvider[] = [];
  #policy: PolicyInput = {};
  #budgets: Partial<Budgets> = {};
  #extra: Pick<RuntimeOptions, "concurrency" | "providerAttempts" | "clock" | "ids" | "onDelta"> = {};

  withLog(log: EventLog): this {
    this.#log = log;
    return this;
  }

  withProvider(provider: Provider): this {
    this.#provider = provider;
    return this;
  }

  withTool(tool: ToolDefinition): this {
    this.#tools.push(tool);
    return this;
  }

  withTools(tools: readonly ToolDefinition[]): this {
    this.#tools.push(...tools);
    return this;
  }

  /** Adds a provider that registers tools in its phase (after MCP tools and `withTools`). */
  withToolProvider(provider: ToolProvider): this {
    this.#toolProviders.push(provider);
    return this;
  }

  /** Merged over what was given before, and over the defaults. */
  withPolicy(policy: PolicyInput): this {
    this.#policy = { ...this.#policy, ...policy, workspace: { ...this.#policy.workspace, ...policy.workspace } };
    return this;
  }

  /** Partial budgets, merged over what was given before and over the defaults. */
  withBudgets(budgets: Partial<Budgets>): this {
    this.#budgets = { ...this.#budgets, ...budgets };
    return this;
  }

  withConcurrency(concurrency: number): this {
    this.#extra.concurrency = concurrency;
    return this;
  }

  withProviderAttempts(attempts: number): this {
    this.#extra.providerAttempts = attempts;
    return this;
  }

  withClock(clock: Clock): this {
    this.#extra.clock = clock;
    return this;
  }

  withIds(ids: IdSource): this {
    this.#extra.ids = ids;
    return this;
  }

  onDelta(listener: NonNullable<RuntimeOptions["onDelta"]>): this {
    this.#extra.onDelta = listener;
    return this;
  }

  build(): Promise<Runtime> {
    if (this.#provider === undefined) throw new TypeError("AgentLoopBuilder needs a provider: call withProvider(provider) first");
    return createRuntime({
      provider: this.#provider,
      ...(this.#log !== undefined ? { log: this.#log } : {}),
      tools: this.#tools,
      toolProviders: this.#toolProviders,
      policy: this.#policy,
      budgets: this.#budgets,
      ...this.#extra,
    });
  }
}

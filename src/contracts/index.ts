export * from "./budgets.js";
export * from "./events.js";
export * from "./policy.js";
export * from "./provider.js";
export * from "./risk.js";
export * from "./tools.js";

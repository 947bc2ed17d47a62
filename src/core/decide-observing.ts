import { resolveRealPath } from "../util/real-path.js";
import { decideAll, decisionsVersionOf, type Decision, type DecisionInputs } from "./decide.js";
import type { DecisionAction } from "./actions.js";

/**
 * A decision made live, with what it read of this machine recorded first (decisions version 2
 * on): every path the gate resolved through the live file system for the first time goes into a
 * `session.environment.observed` event ahead of the decision, in the same atomic append, so replay
 * reads the log where the live run read the disk. The resolver is an input the caller supplies,
 * like the clock (default: the real file system); the decision stays a pure function of the state
 * it is computed from plus those recorded answers. Replay uses `decideAll`, never this.
 */
export function decideObserving(action: DecisionAction, inputs: DecisionInputs, resolve: (absolute: string) => string = resolveRealPath): Decision {
  if (decisionsVersionOf(inputs) < 2) return decideAll(action, inputs);
  const observed = new Map<string, string>();
  const observeRealPath = (absolute: string) => {
    let real = observed.get(absolute);
    if (real === undefined) {
      real = resolve(absolute);
      observed.set(absolute, real);
    }
    return real;
  };
  const decision = decideAll(action, { ...inputs, observeRealPath });
  if (observed.size === 0) return decision;
  const realPaths = [...observed].map(([path, realPath]) => ({ path, realPath }));
  return { ...decision, events: [{ type: "session.environment.observed", data: { realPaths } }, ...decision.events] };
}

/** What the selector kept and what it left for the compressor, both in chronological order. */
export interface Selection<Unit> {
  selected: Unit[];
  dropped: Unit[];
  /** Estimated tokens of the selected units. */
  selectedTokens: number;
}

/**
 * The largest chronological suffix of `units` whose estimated tokens fit `budgetTokens` (the
 * budget left after the system text, the summary, the current user message and the working set
 * are reserved). It walks back from the newest unit and stops at the first one that does not fit:
 * it never skips an expensive unit to include older cheap ones, so the model never sees a history
 * with a hole in it. Everything older is dropped, for the compressor.
 *
 * @example
 * const { selected, dropped } = selectSuffix(history, 2_000, (unit) => estimateUnit(unit));
 */
export function selectSuffix<Unit>(units: readonly Unit[], budgetTokens: number, estimate: (unit: Unit) => number): Selection<Unit> {
  let used = 0;
  let start = units.length;
  while (start > 0) {
    const cost = estimate(units[start - 1] as Unit);
    if (used + cost > budgetTokens) break;
    used += cost;
    start -= 1;
  }
  return { selected: units.slice(start), dropped: units.slice(0, start), selectedTokens: used };
}

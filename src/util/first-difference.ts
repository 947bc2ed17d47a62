import { isRecord } from "./json-value.js";
/**
 * The first place two JSON values differ, walking objects by sorted key and arrays by index, as a
 * path like `data.decisions[0].rule`. Hand-written because replay reports need exactly the first
 * difference in a stable order, with `undefined` properties treated as absent (as JSON does);
 * diff libraries report every change in their own shapes.
 */
export function firstDifference(expected: unknown, actual: unknown, path = ""): { path: string; expected: unknown; actual: unknown } | undefined {
  if (Object.is(expected, actual)) return undefined;
  const bothArrays = Array.isArray(expected) && Array.isArray(actual);
  const bothObjects = isRecord(expected) && isRecord(actual);
  if (bothArrays) {
    const length = Math.max(expected.length, actual.length);
    for (let index = 0; index < length; index += 1) {
      const found = firstDifference(expected[index], actual[index], `${path}[${index}]`);
      if (found) return found;
    }
    return undefined;
  }
  if (bothObjects) {
    const keys = [...new Set([...Object.keys(expected), ...Object.keys(actual)])].sort();
    for (const key of keys) {
      const found = firstDifference(expected[key], actual[key], path === "" ? key : `${path}.${key}`);
      if (found) return found;
    }
    return undefined;
  }
  return { path: path === "" ? "$" : path, expected, actual };
}

/**
 * Whether `firstDifference(expected, actual)` finds no difference, without building a path or
 * sorting keys: the same comparison (`Object.is` for everything else, arrays by index up to the
 * longer length, objects by the union of their keys with `undefined` treated as absent), stopping
 * at the first difference in any order. Replay compares every decision it recomputes, and almost
 * every one is equal (docs/performance.md#snapshots-on-disk-issue-35-first-measurement): it asks
 * this first and walks with `firstDifference` only when there is a difference to name.
 * property-tests/first-difference.test.ts checks both agree.
 *
 * @example
 * const difference = sameJson(logged, recomputed) ? undefined : firstDifference(logged, recomputed);
 */
export function sameJson(expected: unknown, actual: unknown): boolean {
  if (Object.is(expected, actual)) return true;
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual)) return false;
    const length = Math.max(expected.length, actual.length);
    for (let index = 0; index < length; index += 1) if (!sameJson(expected[index], actual[index])) return false;
    return true;
  }
  if (!isRecord(expected) || !isRecord(actual)) return false;
  for (const key of Object.keys(expected)) if (!sameJson(expected[key], actual[key])) return false;
  // The keys only `actual` has: read from `expected` as firstDifference reads them.
  for (const key of Object.keys(actual)) if (!Object.hasOwn(expected, key) && !sameJson(expected[key], actual[key])) return false;
  return true;
}

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


import fc from "fast-check";
import { fuzzCaseArbitrary, type FuzzCase } from "./fuzz-case.js";
import { FuzzRunner } from "./fuzz-runner.js";

/**
 * Every this many case indices, one case carries a call with about 1 MB of arguments: the one at
 * `hugeOffset`, so that the CI-sized run (1 000 cases) holds one too.
 */
export const hugeEvery = 5_000;
const hugeOffset = 500;
/** Shrinking a failed case stops after this long; the smallest failing case found so far is reported. */
const shrinkTimeLimitMs = 120_000;

/** The figures a batch of cases reports (plain data: it crosses from a worker thread). */
export interface FuzzTally {
  passed: number;
  failed: number;
  failures: string[];
  formats: Record<string, number>;
  outcomes: Record<string, number>;
  streams: number;
  exactStreams: number;
  providerRequests: number;
  toolRuns: number;
  approvedRuns: number;
  replays: number;
  hugeArguments: number;
}

export function emptyTally(): FuzzTally {
  return { passed: 0, failed: 0, failures: [], formats: {}, outcomes: {}, streams: 0, exactStreams: 0, providerRequests: 0, toolRuns: 0, approvedRuns: 0, replays: 0, hugeArguments: 0 };
}

export function addTally(into: FuzzTally, from: FuzzTally): void {
  into.passed += from.passed;
  into.failed += from.failed;
  into.failures.push(...from.failures);
  for (const [key, value] of Object.entries(from.formats)) into.formats[key] = (into.formats[key] ?? 0) + value;
  for (const [key, value] of Object.entries(from.outcomes)) into.outcomes[key] = (into.outcomes[key] ?? 0) + value;
  into.streams += from.streams;
  into.exactStreams += from.exactStreams;
  into.providerRequests += from.providerRequests;
  into.toolRuns += from.toolRuns;
  into.approvedRuns += from.approvedRuns;
  into.replays += from.replays;
  into.hugeArguments += from.hugeArguments;
}

/**
 * The fast-check seed of case `index` of a run seeded `seed`: a case is reproducible from these
 * two numbers alone, whatever ran before it or on which worker.
 */
export function caseSeed(seed: number, index: number): number {
  // A 32-bit mix (murmur3's finalizer) so neighbouring indices get unrelated seeds.
  let hash = Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ index;
  hash = Math.imul(hash ^ (hash >>> 16), 0x85ebca6b);
  hash = Math.imul(hash ^ (hash >>> 13), 0xc2b2ae35);
  return (hash ^ (hash >>> 16)) | 0;
}

/**
 * Runs the cases of the given indices on one `FuzzRunner`. Each case is one fast-check run
 * (`numRuns: 1`) with its own seed, so a failure is shrunk by fast-check and reported with its
 * index, seed, path and smallest counterexample.
 */
export async function runFuzzCases(options: { seed: number; indices: Iterable<number>; onProgress?: (done: number) => void }): Promise<FuzzTally> {
  const tally = emptyTally();
  const runner = new FuzzRunner();
  const arbitraries = { plain: fuzzCaseArbitrary({ huge: false }), huge: fuzzCaseArbitrary({ huge: true }) };
  let done = 0;
  try {
    for (const index of options.indices) {
      const seed = caseSeed(options.seed, index);
      const huge = index % hugeEvery === hugeOffset;
      let firstViolations: string[] | undefined;
      let lastViolations: string[] = [];
      let format = "";
      const result = await fc.check(
        fc.asyncProperty(huge ? arbitraries.huge : arbitraries.plain, async (fuzz: FuzzCase) => {
          format ||= fuzz.format;
          const violations = await runner.runCase(fuzz);
          if (violations.length === 0) return true;
          firstViolations ??= violations;
          lastViolations = violations;
          return false;
        }),
        { seed, numRuns: 1, interruptAfterTimeLimit: shrinkTimeLimitMs, markInterruptAsFailure: false },
      );
      tally.formats[format] = (tally.formats[format] ?? 0) + 1;
      if (result.failed) {
        tally.failed += 1;
        tally.failures.push(
          [
            `case ${index} of seed ${options.seed} (${format}; fast-check seed ${result.seed}, path ${result.counterexamplePath ?? "-"})`,
            `  broke: ${(firstViolations ?? [String(result.errorInstance ?? "")]).join(" | ").slice(0, 2_000)}`,
            `  shrunk to: ${lastViolations.join(" | ").slice(0, 2_000)}`,
            `  smallest case: ${JSON.stringify(result.counterexample?.[0]).slice(0, 4_000)}`,
            `  reproduce: TURNLOG_FUZZ_CASES=${index} npm run soak -- --family fuzz --seed ${options.seed}`,
          ].join("\n"),
        );
      } else {
        tally.passed += 1;
      }
      done += 1;
      if (done % 1_000 === 0) options.onProgress?.(done);
    }
  } finally {
    await runner.close();
  }
  tally.streams = runner.counts.streams;
  tally.exactStreams = runner.counts.exactStreams;
  tally.providerRequests = runner.counts.providerRequests;
  tally.toolRuns = runner.counts.toolRuns;
  tally.approvedRuns = runner.counts.approvedRuns;
  tally.replays = runner.counts.replays;
  tally.hugeArguments = runner.counts.hugeArguments;
  tally.outcomes = Object.fromEntries(runner.counts.outcomes);
  return tally;
}

import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import type { SoakFamily, SoakOptions, SoakResult } from "../family.js";
import { addTally, emptyTally, runFuzzCases, type FuzzTally } from "./fuzz/fuzz-cases.js";

/** From this many cases on, the run is spread over worker threads (the CI-sized run stays in-process). */
const workersFrom = 20_000;

/**
 * Fuzzed provider output (docs/reliability.md, family `fuzz`): each case is a seeded random or
 * adversarial provider stream script in the OpenAI Chat Completions or Anthropic Messages wire
 * format — split UTF-16 surrogates and multibyte text, duplicate, missing or shifted indices,
 * interleaved calls, arguments that are not JSON or cut short, 1 MB arguments, colliding IDs and
 * IDs one provider refuses, unknown tool names, finish reasons that disagree with the content,
 * streams that break off, in-band errors and unreadable chunks. Every stream goes through its
 * format's finalizer, and every case through the whole loop (a runtime on a `MemoryEventLog`,
 * tools of several risk classes, a policy that allows, asks and denies).
 *
 * `TURNLOG_FUZZ_CASES=12,345` runs only those case indices (what a failure line says to run);
 * `TURNLOG_FUZZ_WORKERS=n` sets the number of worker threads.
 */
export const fuzzFamily: SoakFamily = {
  name: "fuzz",
  soakCount: 1_000_000,
  ciCount: 1_000,
  async run(options: SoakOptions): Promise<SoakResult> {
    const only = process.env.TURNLOG_FUZZ_CASES;
    const indices = only !== undefined && only !== "" ? only.split(",").map(Number).filter((index) => Number.isSafeInteger(index) && index >= 0) : undefined;
    const cases = indices?.length ?? options.count;
    const requestedWorkers = Number(process.env.TURNLOG_FUZZ_WORKERS ?? "");
    const workers = Number.isSafeInteger(requestedWorkers) && requestedWorkers > 0 ? requestedWorkers : cases >= workersFrom ? Math.min(2, availableParallelism()) : 1;
    const started = performance.now();
    let tally: FuzzTally;
    if (indices !== undefined || workers === 1) {
      tally = await runFuzzCases({
        seed: options.seed,
        indices: indices ?? range(options.count),
        onProgress: (done) => {
          if (done % 100_000 === 0) options.log(`${done} of ${cases} cases`);
        },
      });
    } else {
      tally = await runOnWorkers(options, workers);
    }
    const seconds = (performance.now() - started) / 1000;
    const perSecond = Math.round(cases / seconds);
    const outcomes = Object.entries(tally.outcomes)
      .sort()
      .map(([status, number]) => `${status} ${number}`)
      .join(", ");
    return {
      passed: tally.passed,
      failed: tally.failed,
      failures: tally.failures,
      summary:
        `${cases} fuzz cases (openai-chat ${tally.formats["openai-chat"] ?? 0}, anthropic-messages ${tally.formats["anthropic-messages"] ?? 0}) ` +
        `at ${perSecond} cases/s on ${workers} worker${workers === 1 ? "" : "s"}; ${tally.streams} fuzzed streams finalized (${tally.exactStreams} fault-free, compared exactly), ` +
        `${tally.providerRequests} provider requests through the loop, ${tally.toolRuns} tool runs (${tally.approvedRuns} after an approved ask), ` +
        `${tally.replays} replays, ${tally.hugeArguments} with 1 MB arguments; sends ended: ${outcomes}`,
    };
  },
};

function* range(count: number): Generator<number> {
  for (let index = 0; index < count; index += 1) yield index;
}

/** Runs the cases on `workers` threads, each taking every `workers`-th index. */
async function runOnWorkers(options: SoakOptions, workers: number): Promise<FuzzTally> {
  const total = emptyTally();
  const progress = new Array<number>(workers).fill(0);
  let reported = 0;
  const started = performance.now();
  await Promise.all(
    progress.map(
      (_, first) =>
        new Promise<void>((resolve, reject) => {
          const worker = new Worker(new URL("./fuzz/fuzz-worker-entry.mjs", import.meta.url), { workerData: { seed: options.seed, count: options.count, first, workers } });
          worker.on("message", (message: { progress?: number; tally?: FuzzTally }) => {
            if (message.progress !== undefined) {
              progress[first] = message.progress;
              const done = progress.reduce((sum, value) => sum + value, 0);
              if (done - reported >= 10_000) {
                reported = done;
                options.log(`${done} of ${options.count} cases, ${Math.round(done / ((performance.now() - started) / 1000))} cases/s`);
              }
            }
            if (message.tally !== undefined) addTally(total, message.tally);
          });
          worker.on("error", reject);
          worker.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`fuzz worker ${first} exited with code ${code}`))));
        }),
    ),
  );
  return total;
}

/**
 * One fault family of the soak (docs/reliability.md): a seeded run of `count` cases that reports
 * what passed and what failed. `npm run soak` (soak/run.ts) runs every family at its full count;
 * the CI-sized test of a family (test/reliability/) runs the same `run` at `ciCount` with a fixed
 * seed, so the test and the soak can never drift apart.
 */
export interface SoakOptions {
  /** The seed every random choice of the run is drawn from: the same seed gives the same cases. */
  seed: number;
  /** How many cases (kill points, fuzzed responses, fault injections, …) to run. */
  count: number;
  /** Progress and failure details, one line at a time (stderr in the soak, silent in tests). */
  log: (line: string) => void;
}

export interface SoakResult {
  /** Cases whose every invariant held. */
  passed: number;
  /** Cases where an invariant broke (or the case crashed or hung). */
  failed: number;
  /** One line for the summary: the family's measured figures (kill points, cases per second, …). */
  summary: string;
  /** Each failed case, with what is needed to reproduce it (its seed or index and what broke). */
  failures: string[];
}

export interface SoakFamily {
  /** Short name: `--family <name>` and the summary line's label. */
  name: string;
  /** The count `npm run soak` uses: the figure (≥ 1 000 kill points, ≥ 1 000 000 fuzz cases, …). */
  soakCount: number;
  /** The count the CI-sized test uses: seconds, not minutes. */
  ciCount: number;
  run(options: SoakOptions): Promise<SoakResult>;
}

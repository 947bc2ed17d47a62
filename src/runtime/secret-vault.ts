/**
 * The real argument texts of calls whose logged arguments are redacted. They live only in this
 * process's memory, for the run (docs/policy.md#secrets): after a restart they are gone, and a call that
 * still needed them cannot run — its packet says so.
 */
export class SecretVault {
  readonly #arguments = new Map<string, string>();

  set(turnId: string, index: number, argumentsText: string): void {
    this.#arguments.set(`${turnId}\u0000${index}`, argumentsText);
  }

  get(turnId: string, index: number): string | undefined {
    return this.#arguments.get(`${turnId}\u0000${index}`);
  }

  /** Whether it holds no secret: then nothing of the session lives only in this process's memory. */
  get empty(): boolean {
    return this.#arguments.size === 0;
  }

  /** Forgets a finished turn's secrets. */
  forgetTurn(turnId: string): void {
    for (const key of this.#arguments.keys()) if (key.startsWith(`${turnId}\u0000`)) this.#arguments.delete(key);
  }
}

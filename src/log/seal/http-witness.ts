import type { Seal } from "./seal-record.js";
import type { LogIdentity } from "./log-identity.js";
import type { SealWitnessStore, WitnessedSeal } from "./seal-witness.js";

/** One record as the witness service keeps and returns it. */
interface HttpWitnessRecord extends WitnessedSeal {
  stream: string;
}

/**
 * A witness kept by an HTTP service that only ever adds records (`--witness https://…`): run by
 * another user or on another machine, it is out of reach of anyone who can rewrite the log
 * (docs/security.md, "Where the witness is kept"). The protocol (docs/log.md, "The HTTP witness"):
 *
 * - `PUT <url>/logs/<log name>` with `{ "label" }`: the log exists from now on (201, or 200 when it did);
 * - `POST <url>/logs/<log name>/seals` with a seal's `{ stream, version, hash, signature, sealedAt, keyId }`: added (201);
 * - `GET <url>/logs/<log name>/seals`: `{ "records": [...] }` in the order added, or 404 for a log never opened.
 *
 * The client keeps each stream's highest version, so a service that keeps every record (never
 * replacing one) cannot be rolled back by the client.
 *
 * @example
 * const witness = new HttpWitness("https://witness.internal", logIdentity({ dir: ".turnlog" }));
 */
export class HttpWitness implements SealWitnessStore {
  readonly file: string;
  readonly #logUrl: string;

  constructor(
    url: string,
    private readonly identity: LogIdentity,
  ) {
    this.file = url.replace(/\/+$/, "");
    this.#logUrl = `${this.file}/logs/${encodeURIComponent(identity.name)}`;
  }

  async open(): Promise<void> {
    await this.#request("PUT", this.#logUrl, { label: this.identity.label });
  }

  async exists(): Promise<boolean> {
    const response = await this.#request("GET", this.#logUrl, undefined, [404]);
    return response.status !== 404;
  }

  async record(seal: Seal): Promise<void> {
    const record: HttpWitnessRecord = { stream: seal.stream, version: seal.version, hash: seal.hash, signature: seal.signature, sealedAt: seal.sealedAt, keyId: seal.keyId };
    await this.#request("POST", `${this.#logUrl}/seals`, record);
  }

  async read(): Promise<Map<string, WitnessedSeal>> {
    const response = await this.#request("GET", `${this.#logUrl}/seals`, undefined, [404]);
    if (response.status === 404) return new Map();
    const body = (await response.json().catch(() => undefined)) as { records?: unknown } | undefined;
    if (body === undefined || !Array.isArray(body.records)) throw new Error(`the witness at ${this.file} did not answer with { "records": [...] }`);
    const latest = new Map<string, WitnessedSeal>();
    for (const value of body.records as unknown[]) {
      const record = value as Partial<HttpWitnessRecord>;
      const { stream, version, hash, signature, sealedAt, keyId } = record;
      if (typeof stream !== "string" || !Number.isSafeInteger(version) || typeof hash !== "string" || typeof signature !== "string" || typeof sealedAt !== "string" || typeof keyId !== "string") {
        throw new Error(`the witness at ${this.file} answered with a record that is not a seal`);
      }
      const known = latest.get(stream);
      if (known === undefined || known.version < (version as number)) latest.set(stream, { version: version as number, hash, signature, sealedAt, keyId });
    }
    return latest;
  }

  async #request(method: string, url: string, body: unknown, allowed: readonly number[] = []): Promise<Response> {
    let response: Response;
    try {
      response = await fetch(url, {
        method,
        ...(body !== undefined ? { body: JSON.stringify(body), headers: { "content-type": "application/json" } } : {}),
      });
    } catch (error) {
      const cause = error instanceof Error ? ((error.cause as Error | undefined)?.message ?? error.message) : String(error);
      throw new Error(`the witness at ${this.file} cannot be reached: ${cause}`, { cause: error });
    }
    if (!response.ok && !allowed.includes(response.status)) {
      await response.body?.cancel();
      throw new Error(`the witness at ${this.file} refused ${method} ${url.slice(this.file.length)}: HTTP ${response.status}`);
    }
    return response;
  }
}

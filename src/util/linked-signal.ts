/** A signal that aborts when any of its sources does, and `dispose`, which stops listening to them. */
export interface LinkedSignal {
  readonly signal: AbortSignal;
  dispose(): void;
}

/**
 * Links abort signals: the result aborts, with the first source's reason, as soon as one source
 * aborts (at once if one already has). `dispose` removes its listeners from the sources.
 *
 * Why not `AbortSignal.any`: its sources keep a reference to every signal derived from them until
 * garbage collection, and a runtime's closing signal lives as long as the runtime while each
 * `send` derives one; here each operation unlinks itself when it ends.
 *
 * @example
 * const linked = linkSignals([options.signal, closing]);
 * try { await work(linked.signal); } finally { linked.dispose(); }
 */
export function linkSignals(sources: readonly (AbortSignal | undefined)[]): LinkedSignal {
  const controller = new AbortController();
  const present = sources.filter((source): source is AbortSignal => source !== undefined);
  const aborted = present.find((source) => source.aborted);
  if (aborted !== undefined) {
    controller.abort(aborted.reason);
    return { signal: controller.signal, dispose: () => undefined };
  }
  const listeners = present.map((source) => {
    const listener = () => controller.abort(source.reason);
    source.addEventListener("abort", listener, { once: true });
    return [source, listener] as const;
  });
  return {
    signal: controller.signal,
    dispose: () => {
      for (const [source, listener] of listeners) source.removeEventListener("abort", listener);
    },
  };
}

/** Waiting that a worker's or a request's AbortSignal cuts short: shared by the controller's workers and the substrates. */

/** Waits `ms`, or less if `signal` aborts first (it does not throw: the caller looks at the signal). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/** Polls `fn` until it returns a truthy value (returned) or `timeoutMs` passes (throws with the last state). */
export async function eventually<T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 30_000,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      lastErr = err;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(
    `timed out after ${timeoutMs} ms waiting for ${what}${lastErr ? `: ${(lastErr as Error).message}` : ""}`,
  );
}

/**
 * Progress for long operations that can go quiet (a refused SSH port retried, a cluster that does
 * not answer): the step under way is said first, and when nothing has been printed for a while a
 * line says the command is still at it and for how long, so a user never stares at a silent
 * terminal wondering whether it hangs.
 */
export async function withHeartbeat<T>(
  progress: (line: string) => void,
  /** The step under way, printed first (none: the operation's own first line comes at once). */
  first: string | undefined,
  run: (progress: (line: string) => void) => Promise<T>,
  /** `step`: what it is doing before any line says (without `first`). */
  opts: { quietMs?: number; step?: string } = {},
): Promise<T> {
  const quietMs = opts.quietMs ?? 10_000;
  const started = Date.now();
  let step = first ?? opts.step ?? "working";
  let lastLine = started;
  if (first) progress(first);
  const timer = setInterval(() => {
    if (Date.now() - lastLine < quietMs) return;
    progress(`  … still ${lowerFirst(step.trim())} (${Math.round((Date.now() - started) / 1000)} s so far)`);
    lastLine = Date.now();
  }, 1000);
  timer.unref();
  try {
    return await run((line) => {
      step = line;
      lastLine = Date.now();
      progress(line);
    });
  } finally {
    clearInterval(timer);
  }
}

function lowerFirst(s: string): string {
  return /^[A-Z][a-z]/.test(s) ? s[0]!.toLowerCase() + s.slice(1) : s;
}

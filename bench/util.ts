/** Small helpers shared by the benchmarks: statistics, process memory, temp controllers. */
import { readFile } from "node:fs/promises";
import { StewardError } from "../api";

export function percentile(values: number[], p: number): number {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}
export const median = (v: number[]): number => percentile(v, 50);

/** Resident set size of a process in MiB, from /proc. */
export async function rssMiB(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? "0");
  return kb / 1024;
}

/** What every benchmark takes: how big to make it (its meaning and default are the benchmark's own). */
export interface BenchOptions {
  size?: number;
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `fn` every 100 ms until it answers (what it throws ends the wait at once), for at most `ms`. */
export async function until<T>(what: string, fn: () => Promise<T | undefined>, ms = 240_000): Promise<T> {
  for (const deadline = Date.now() + ms; ; await sleep(100)) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
  }
}

/**
 * What `call` answers, or undefined while it is refused because storage it names is still attached or
 * being detached (a removed unit's storage is kept only once it is off its machine): for {@link until}.
 */
export async function unlessStorageAttached<T>(call: () => Promise<T>): Promise<T | undefined> {
  try {
    return await call();
  } catch (err) {
    if (StewardError.isInstance(err) && err.reason === "storage-attached") return undefined;
    throw err;
  }
}

export function report(name: string, figures: Record<string, string | number>): void {
  process.stdout.write(`\n${name}\n`);
  for (const [k, v] of Object.entries(figures))
    process.stdout.write(`  ${k.padEnd(44)} ${typeof v === "number" ? v.toFixed(v < 10 ? 2 : 1) : v}\n`);
}

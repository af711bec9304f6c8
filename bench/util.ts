/** Small helpers shared by the benchmarks: statistics, process memory, temp controllers. */
import { readFile } from "node:fs/promises";

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

export function report(name: string, figures: Record<string, string | number>): void {
  process.stdout.write(`\n${name}\n`);
  for (const [k, v] of Object.entries(figures))
    process.stdout.write(`  ${k.padEnd(44)} ${typeof v === "number" ? v.toFixed(v < 10 ? 2 : 1) : v}\n`);
}

/**
 * Reading what the secret-db / secret-client fixture operators record in <record-dir>/hooks.log:
 * "<unit> <event> <detail…>" lines (hashes of values, never values), and "<unit> hook <name>" for
 * every hook run, so a test can tell that none re-ran (a migration's, say); and every file under a
 * directory, for the leak scans.
 */
import { readFile, readdir } from "node:fs/promises";
import { join } from "node:path";
import { eventually } from "./eventually";

/** The events recorded so far, each line split on spaces. */
export async function secretEvents(record: string): Promise<string[][]> {
  const text = await readFile(join(record, "hooks.log"), "utf8").catch(() => "");
  return text
    .split("\n")
    .filter(Boolean)
    .map((l) => l.split(" "));
}

/** Waits for the event `event` of `unit` (after the first `skip` such events) and returns it. */
export async function secretEventOf(
  record: string,
  unit: string,
  event: string,
  timeoutMs = 60_000,
  skip = 0,
): Promise<string[]> {
  return eventually(
    `${unit} ${event}${skip ? ` (#${skip + 1})` : ""}`,
    async () => (await secretEvents(record)).filter((e) => e[0] === unit && e[1] === event)[skip],
    timeoutMs,
    200,
  );
}

/** Every hook each unit ran, in order, without update-status (its timing is random by design). */
export async function hooksRun(record: string): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const [unit, event, hook] of await secretEvents(record))
    if (event === "hook" && hook !== "update-status") (out[unit!] ??= []).push(hook!);
  return out;
}

/** Every file under `dir` (as far as this process may read), for the leak scans. */
export async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...(await filesUnder(p)));
    else if (e.isFile()) out.push(p);
  }
  return out;
}

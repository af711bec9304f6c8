/**
 * Waiting for a model to settle, with a progress line each time a unit's state changes, and a
 * closing table of the units that are not ready when time runs out.
 */
import type { ControllerClient, ModelStatus, UnitStatusView } from "../api";
import { StewardError, unitIsReady } from "../api";
import { table } from "./table";

export interface WaitOptions {
  /** Applications to wait for (default: all in the model). */
  apps?: string[];
  timeoutMs: number;
  progress: (line: string) => void;
  signal?: AbortSignal;
}

/** Resolves when every unit of the chosen applications is active/idle and no unit is being removed. */
export async function waitForModelReady(client: ControllerClient, model: string, o: WaitOptions): Promise<ModelStatus> {
  const deadline = Date.now() + o.timeoutMs;
  const seen = new Map<string, string>();
  let last: ModelStatus | undefined;
  while (Date.now() < deadline && !o.signal?.aborted) {
    last = await client.status(model);
    const units = unitsOf(last, o.apps);
    for (const u of units) {
      const line = `${u.workload.current}/${u.agent.current}${u.workload.message ? ` ${u.workload.message}` : ""}`;
      if (seen.get(u.name) !== line) { seen.set(u.name, line); o.progress(`  ${u.name.padEnd(14)} ${line}`); }
    }
    const appsSettled = (o.apps ?? Object.keys(last.applications)).every((a) => last!.applications[a]?.life !== "dying");
    if (appsSettled && units.every((u) => unitIsReady(u) && u.life === "alive")) return last;
    await new Promise((r) => setTimeout(r, 300));
  }
  const notReady = last ? unitsOf(last, o.apps).filter((u) => !unitIsReady(u)) : [];
  throw new StewardError("unavailable", `timed out after ${Math.round(o.timeoutMs / 1000)} s waiting for units to be active/idle; not ready:\n${table(["Unit", "Workload", "Agent", "Message"], notReady.map((u) => [u.name, u.workload.current, u.agent.current, u.workload.message || u.agent.message]))}`, { details: { notReady: notReady.map((u) => u.name) } });
}

function unitsOf(s: ModelStatus, apps?: string[]): UnitStatusView[] {
  return Object.values(s.applications).filter((a) => !apps || apps.includes(a.name)).flatMap((a) => Object.values(a.units));
}

/** Parses durations like `90`, `90s`, `5m`, `1h` into milliseconds. */
export function parseDuration(text: string, what: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!m) throw new StewardError("invalid-request", `${what} "${text}" is not a duration such as 90s, 5m or 1h`);
  const n = Number(m[1]);
  return n * ({ ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] ?? "s"] ?? 1000);
}

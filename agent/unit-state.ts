/**
 * What a unit's agent remembers across restarts (`<agent-dir>/units/<unit>/state.json`), written
 * atomically after every committed hook: a restarted agent resumes without re-running a committed
 * hook and without skipping one.
 */
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { writeFileAtomic } from "./files";

export interface UnitLocalState {
  installed: boolean;
  started: boolean;
  stopped: boolean;
  removed: boolean;
  /** Operator content the unit last installed or upgraded to. */
  operatorHash: string;
  /** Hash of the config the last committed config-changed saw ("" before the first). */
  configHash: string;
  /** Whether the operator ever set a workload status (if not, it shows "unknown" once started). */
  statusSet: boolean;
  /** The workload status the operator last set, for status-get after a restart. */
  workload: { status: string; message: string };
  /** The hook that failed and must run again before anything else, if any. */
  failedHook?: string;
  /** Sequence of committed hooks, for operators and tests that inspect history (capped). */
  committed: string[];
}

export const initialUnitState = (): UnitLocalState => ({ installed: false, started: false, stopped: false, removed: false, operatorHash: "", configHash: "", statusSet: false, workload: { status: "waiting", message: "" }, committed: [] });

const MAX_HISTORY = 200;

export async function loadUnitState(unitDir: string): Promise<UnitLocalState> {
  const text = await readFile(join(unitDir, "state.json"), "utf8").catch(() => undefined);
  return text ? { ...initialUnitState(), ...(JSON.parse(text) as Partial<UnitLocalState>) } : initialUnitState();
}

export async function saveUnitState(unitDir: string, s: UnitLocalState): Promise<void> {
  await mkdir(unitDir, { recursive: true, mode: 0o700 });
  if (s.committed.length > MAX_HISTORY) s.committed = s.committed.slice(-MAX_HISTORY);
  await writeFileAtomic(join(unitDir, "state.json"), JSON.stringify(s));
}

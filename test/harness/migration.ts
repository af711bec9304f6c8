/** Migrating a model in tests: start it through the API and wait for its end; the hook counts that say nothing re-ran. */
import type { ExecutionContext } from "ava";
import type { ControllerClient, MigrationInfo } from "../../api";
import { eventually } from "./eventually";

export interface MigrationTarget {
  name: string;
  addresses: string[];
  caCert: string;
  user: string;
  password: string;
}

/** Asks `source` to migrate `model` to `target` and waits until it ended (DONE or ABORTDONE). */
export async function migrateAndWait(
  source: ControllerClient,
  model: string,
  target: MigrationTarget,
  timeoutMs = 120_000,
): Promise<MigrationInfo> {
  await source.call("POST", `/v1/models/${model}/migrate`, { target });
  return eventually(
    `the migration of ${model} over`,
    async () => {
      const m = await source.call<MigrationInfo>("GET", `/v1/models/${model}/migration`);
      return m.phase === "DONE" || m.phase === "ABORTDONE" ? m : undefined;
    },
    timeoutMs,
    250,
  );
}

const countOf = (hooks: string[] | undefined, name: string): number => (hooks ?? []).filter((h) => h === name).length;

/** Each unit ran install and start once, and config-changed `configChanged` times (recorder sequences). */
export function assertNoHookRerun(
  t: ExecutionContext,
  seq: Map<string, string[]>,
  units: string[],
  configChanged: number,
): void {
  for (const u of units) {
    const hooks = seq.get(u);
    t.is(countOf(hooks, "install"), 1, `${u}: ${hooks?.join(" ")}`);
    t.is(countOf(hooks, "start"), 1, `${u}: ${hooks?.join(" ")}`);
    t.is(countOf(hooks, "config-changed"), configChanged, `${u}: ${hooks?.join(" ")}`);
  }
}

/**
 * `upgrade-controller --via-migration TARGET`: a new minor or major version is reached by moving
 * every model to a controller of that version (bootstrapped beside this one), one model at a time,
 * stopping at the first that does not move (Juju's advice, done for the user).
 */
import type { ControllerClient, MigrationInfo } from "../../api/core";
import { StewardError, routes } from "../../api/core";
import type { ControllerEntry } from "../client-config";
import { waitForMigration } from "../migration-progress";

export interface ViaMigration {
  source: ControllerClient;
  sourceName: string;
  /** The target's name in this client's list, and its entry (its login goes to the source, sealed). */
  targetName: string;
  target: ControllerEntry;
  dryRun: boolean;
  agentWaitSeconds?: number;
  out: (line: string) => void;
}

/** Moves every model; returns the names moved. Throws, saying what moved and what remains, at the first failure. */
export async function upgradeViaMigration(o: ViaMigration): Promise<string[]> {
  if (!o.target.password && !o.target.token)
    throw new StewardError(
      "invalid-request",
      `this client holds no login for ${o.targetName}: run steward login -c ${o.targetName} first`,
    );
  const models = (await o.source.listModels())
    .filter((m) => m.life === "alive")
    .map((m) => m.name)
    .sort();
  o.out(
    `Upgrade plan for controller "${o.sourceName}": move its ${models.length} model${models.length === 1 ? "" : "s"} to controller "${o.targetName}", one at a time, stopping at the first that does not move`,
  );
  for (const [i, m] of models.entries()) o.out(`  ${i + 1}. ${m}`);
  if (o.dryRun || models.length === 0) return [];
  const moved: string[] = [];
  for (const model of models) {
    o.out(`Moving ${model} (${moved.length + 1} of ${models.length})`);
    let info: MigrationInfo;
    try {
      await o.source.call(
        routes.migrate,
        { model },
        {
          target: {
            name: o.targetName,
            addresses: o.target.addresses,
            caCert: o.target.caCert,
            user: o.target.user,
            ...(o.target.password ? { password: o.target.password } : {}),
            ...(o.target.token ? { token: o.target.token } : {}),
          },
          ...(o.agentWaitSeconds !== undefined ? { agentWaitSeconds: o.agentWaitSeconds } : {}),
        },
      );
      info = await waitForMigration(o.source, model, (line) => o.out(`  ${line}`));
    } catch (err) {
      throw stopped(o, moved, models, model, (err as Error).message);
    }
    if (info.phase !== "DONE") throw stopped(o, moved, models, model, info.failure ?? "aborted");
    moved.push(model);
  }
  return moved;
}

function stopped(o: ViaMigration, moved: string[], models: string[], failed: string, why: string): StewardError {
  const left = models.filter((m) => !moved.includes(m));
  return new StewardError(
    "conflict",
    `the upgrade by migration stopped at model ${failed}: ${why}. Moved to ${o.targetName}: ${moved.join(", ") || "none"}; still on ${o.sourceName}: ${left.join(", ")}. Fix the cause and run the same command again to move the rest`,
    { reason: "upgrade-by-migration-stopped" },
  );
}

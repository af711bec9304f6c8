/** Model migration between controllers (DESIGN.md §8a): the source's master and routes, the target's staging and routes. */
import type { Logger } from "../../api";
import type { Worker } from "../workers";
import { periodic } from "../workers";
import type { MigrationStaging } from "./staging";

export { MigrationMaster, describePhase } from "./master";
export { MigrationStaging } from "./staging";
export { installMigrationGuards, migrationOf, registerMigrationSourceRoutes } from "./source-routes";
export { registerMigrationTargetRoutes } from "./target-routes";
export { MigrationLogSender } from "./log-transfer";

/** A staging left this long without its source's heartbeat is purged (the source's master heartbeats every 30 s). */
export const STAGING_IDLE_PURGE_MS = 10 * 60_000;

/** On the leader: purges idle stagings once a minute. */
export function stagingPurge(staging: MigrationStaging, log: Logger, idleMs = STAGING_IDLE_PURGE_MS): Worker {
  return periodic(
    "staging-purge",
    60_000,
    async () => {
      const ids = await staging.purgeIdle(idleMs);
      if (ids.length > 0)
        log.warn("purged staged migrations their source stopped heartbeating", { ids: ids.join(",") });
    },
    { log, failure: "could not purge idle staged migrations", failureLevel: "warn" },
  );
}

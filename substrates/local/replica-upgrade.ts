/**
 * Upgrading a controller on this host in place (../replica-upgrade.ts): the new release staged in
 * its data directory (`releases/<version>`) beside the one it runs, `current` switched to it and the
 * controller restarted; a rollback switches back. One replica, so no order to choose.
 */
import { join } from "node:path";
import { StewardError } from "../../api/core";
import { BUILD_DIR } from "../controller-files";
import type { ReplicaUpgrade, ReplicaUpgradeContext, ReplicaUpgrader } from "../replica-upgrade";
import { bundleVersion, controllerBundleVersion } from "../replica-upgrade";
import { restartLocalController } from "./controller-process";
import {
  currentLocalRelease,
  pruneLocalReleases,
  runningControllerBuild,
  stageLocalRelease,
  switchLocalRelease,
} from "./controller-release";

export async function localReplicaUpgrade(
  recorded: { dataDir: string },
  o: ReplicaUpgradeContext,
): Promise<ReplicaUpgrade> {
  return { upgrader: async () => localUpgrader(recorded.dataDir, o.caCert, o.timeoutMs) };
}

/** The upgrader for a local controller: releases in its data directory, one replica. */
function localUpgrader(dataDir: string, caCert: string, timeoutMs: number): ReplicaUpgrader {
  let from = "";
  let to = "";
  return {
    async stage(step, progress) {
      from = step.version;
      // The running release is kept as a release too (the installation it ran from may be replaced later).
      if ((await currentLocalRelease(dataDir)) !== from) {
        const running = await runningControllerBuild(dataDir);
        const holds = await bundleVersion(join(running, "controller-bundle", "main.js"));
        if (holds !== from)
          throw new StewardError(
            "invalid-request",
            `the controller runs ${from} from ${running}, which now holds ${holds} (Steward was replaced under it): there is no copy of ${from} to roll back to. Restart the controller (steward upgrade-controller then has nothing to do if it comes up at ${holds})`,
          );
        await stageLocalRelease(dataDir, running, from);
      }
      to = await controllerBundleVersion();
      await stageLocalRelease(dataDir, BUILD_DIR, to);
      progress(`    staged ${to} in ${dataDir}/releases/${to} (${from} kept beside it)`);
    },
    async switchOver(_step, progress) {
      await switchLocalRelease(dataDir, to);
      progress(`    switched to ${to}; restarting`);
      await restartLocalController(dataDir, caCert, timeoutMs).catch((err: Error) => {
        throw new StewardError("unavailable", `the controller did not start on ${to}: ${err.message}`, {
          cause: err,
          reason: "controller-did-not-start",
        });
      });
    },
    async rollBack(_step, progress) {
      await switchLocalRelease(dataDir, from);
      progress(`    switched back to ${from}; restarting`);
      await restartLocalController(dataDir, caCert, timeoutMs);
    },
    async prune() {
      await pruneLocalReleases(dataDir, [to, from]);
    },
  };
}

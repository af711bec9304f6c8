/**
 * Upgrading replicas installed over SSH in place (../replica-upgrade.ts): this client's own release
 * pushed to each host beside the one it runs (./controller-upgrade.ts), switched and restarted there;
 * the previous release stays on the host for a rollback. The caller gives the SSH access (the
 * controller keeps none: see ../replica-upgrade.ts for why the client, not the leader, does this).
 */
import { StewardError } from "../../api/core";
import { cloudReplicaRefusal } from "../cloud-bootstrap";
import { controllerFiles } from "../controller-files";
import type { ReplicaUpgrade, ReplicaUpgradeContext, ReplicaUpgrader, SshAccess } from "../replica-upgrade";
import type { Staged } from "./controller-installer";
import {
  pruneControllerReleases,
  rollbackControllerUpgrade,
  stageControllerUpgrade,
  switchControllerRelease,
} from "./controller-upgrade";
import { SshSession } from "./ssh-session";

export async function sshReplicaUpgrade(_recorded: unknown, o: ReplicaUpgradeContext): Promise<ReplicaUpgrade> {
  return {
    async upgrader(steps) {
      // A replica the quorum keeper launched on a cloud (its replica cloud) is no host this client reaches over SSH.
      const onInstance = steps.find((s) => s.instance);
      if (onInstance)
        throw new StewardError(
          "invalid-request",
          `replica ${onInstance.name} ${cloudReplicaRefusal(onInstance.instance!.id)}: bootstrap a controller at ${o.to} and move the models to it by migration`,
        );
      for (const s of steps)
        if (!s.host) throw new StewardError("internal", `replica ${s.name} has no known host to reach over SSH`);
      return sshUpgrader(await o.sshAccess(steps.map((s) => s.host)));
    },
  };
}

/** The upgrader for replicas installed over SSH: this client's own release, pushed to each host. */
function sshUpgrader(access: SshAccess): ReplicaUpgrader {
  const staged = new Map<string, Staged>();
  const connect = (host: string): Promise<SshSession> =>
    SshSession.connect(
      {
        host,
        user: access.user,
        privateKey: access.privateKey,
        ...(access.hostKeys[host] ? { hostKey: access.hostKeys[host] } : { trustOnFirstUse: true }),
      },
      { attempts: 2 },
    );
  const withSession = async <T>(host: string, f: (s: SshSession) => Promise<T>): Promise<T> => {
    const s = await connect(host);
    try {
      return await f(s);
    } finally {
      s.close();
    }
  };
  return {
    async stage(step, progress) {
      const st = await withSession(step.host, (s) =>
        stageControllerUpgrade(s, controllerFiles(), (l) => progress(`    ${l}`)),
      );
      staged.set(step.name, st);
    },
    async switchOver(step, progress) {
      await withSession(step.host, (s) =>
        switchControllerRelease(s, staged.get(step.name)!, step.name, (l) => progress(`    ${l}`)),
      );
    },
    async rollBack(step, progress) {
      progress(`    restoring the previous release on ${step.host}`);
      await withSession(step.host, (s) => rollbackControllerUpgrade(s, step.name));
    },
    async prune(step) {
      await withSession(step.host, (s) => pruneControllerReleases(s));
    },
  };
}

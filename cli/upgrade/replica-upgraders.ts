/**
 * How one replica is upgraded in place, by where it runs: a local controller (files in its data
 * directory) or a replica installed over SSH (the new release pushed from this CLI); replicas on
 * Kubernetes go by their StatefulSet's image (kubernetes-rollout.ts). Replicas on cloud instances
 * are refused with what to do instead, before anything changes.
 *
 * Why the CLI and not the controller leader pushes the release over SSH: the leader holds no SSH
 * access to the replicas' hosts (a spare's key is dropped once its replica joined, and the first
 * host's key was never given to the controller), and keeping root keys to every replica in the
 * store would widen what a stolen store gives away. The CLI also stands outside the cluster, so the
 * run survives every replica's restart, the leader's included, and sees the API as clients do.
 */
import { join } from "node:path";
import type * as Substrates from "../../substrates";
import { StewardError } from "../../api/core";
import type { ControllerEntry } from "../client-config";
import type { ReplicaStep } from "./plan";

export interface ReplicaUpgrader {
  /** Puts the new release beside the running one; changes nothing that runs. */
  stage?(step: ReplicaStep, progress: (line: string) => void): Promise<void>;
  /** Instead of `stage`, where one change serves every replica (a StatefulSet's image): made once for all. */
  stageAll?(steps: ReplicaStep[], progress: (line: string) => void): Promise<void>;
  /**
   * The order the substrate imposes (a StatefulSet replaces pods from the highest ordinal down).
   * Without it: followers first and the leader last, decided again before each replica.
   */
  order?(steps: ReplicaStep[]): ReplicaStep[];
  /** Switches the replica to the new release and restarts it. */
  switchOver(step: ReplicaStep, progress: (line: string) => void): Promise<void>;
  /** Puts the replica back on the release it ran before, and restarts it. */
  rollBack(step: ReplicaStep, progress: (line: string) => void): Promise<void>;
  /** Once the replica passed its gate: deletes releases older than the one it replaced (kept for a rollback). */
  prune(step: ReplicaStep): Promise<void>;
  /** Where this client reaches the replica itself, when not at the addresses it announces (a pod's cluster DNS name). */
  reach?(step: ReplicaStep): Promise<string[]>;
  /** What to look at when the replica failed, and what state the upgrade left. */
  hint?(step: ReplicaStep): string;
}

export interface SshAccess {
  user: string;
  privateKey: string;
  /** Pinned host keys by host. */
  hostKeys: Record<string, string>;
  trustOnFirstUse: boolean;
}

/** Why this controller's replicas cannot be upgraded in place by this command, if they cannot. */
export function unsupportedReplicas(entry: ControllerEntry, steps: ReplicaStep[], to: string): string | undefined {
  if (entry.kubernetes) return undefined; // by its StatefulSet's image (kubernetes-rollout.ts)
  const cloud = steps.find((s) => s.instance) ?? (entry.aws || entry.vsphere ? steps[0] : undefined);
  if (cloud) {
    return `replica ${cloud.name}${cloud.instance ? ` runs on the cloud instance ${cloud.instance.id}` : " runs on a cloud instance"}, which this command cannot upgrade in place yet (cloud-init installed it and no SSH access to it is kept): bootstrap a controller at ${to} and move the models to it by migration`;
  }
  return undefined;
}

/** The upgrader for a local controller: releases in its data directory, one replica. */
export function localUpgrader(
  subs: typeof Substrates,
  dataDir: string,
  caCert: string,
  timeoutMs: number,
): ReplicaUpgrader {
  let from = "";
  let to = "";
  return {
    async stage(step, progress) {
      from = step.version;
      // The running release is kept as a release too (the installation it ran from may be replaced later).
      if ((await subs.currentLocalRelease(dataDir)) !== from) {
        const running = await subs.runningControllerBuild(dataDir);
        const holds = await versionOf(join(running, "controller-bundle", "main.js"));
        if (holds !== from)
          throw new StewardError(
            "invalid-request",
            `the controller runs ${from} from ${running}, which now holds ${holds} (Steward was replaced under it): there is no copy of ${from} to roll back to. Restart the controller (steward upgrade-controller then has nothing to do if it comes up at ${holds})`,
          );
        await subs.stageLocalRelease(dataDir, running, from);
      }
      to = await bundleVersion(subs);
      await subs.stageLocalRelease(dataDir, subs.BUILD_DIR, to);
      progress(`    staged ${to} in ${dataDir}/releases/${to} (${from} kept beside it)`);
    },
    async switchOver(_step, progress) {
      await subs.switchLocalRelease(dataDir, to);
      progress(`    switched to ${to}; restarting`);
      await subs.restartLocalController(dataDir, caCert, timeoutMs).catch((err: Error) => {
        throw new StewardError("unavailable", `the controller did not start on ${to}: ${err.message}`, {
          cause: err,
          reason: "controller-did-not-start",
        });
      });
    },
    async rollBack(_step, progress) {
      await subs.switchLocalRelease(dataDir, from);
      progress(`    switched back to ${from}; restarting`);
      await subs.restartLocalController(dataDir, caCert, timeoutMs);
    },
    async prune() {
      await subs.pruneLocalReleases(dataDir, [to, from]);
    },
  };
}

/** The upgrader for replicas installed over SSH: this CLI's own release, pushed to each host. */
export function sshUpgrader(subs: typeof Substrates, access: SshAccess): ReplicaUpgrader {
  const staged = new Map<string, Substrates.ssh.Staged>();
  const connect = (host: string): Promise<Substrates.ssh.SshSession> =>
    subs.ssh.SshSession.connect(
      {
        host,
        user: access.user,
        privateKey: access.privateKey,
        ...(access.hostKeys[host] ? { hostKey: access.hostKeys[host] } : { trustOnFirstUse: true }),
      },
      { attempts: 2 },
    );
  const withSession = async <T>(host: string, f: (s: Substrates.ssh.SshSession) => Promise<T>): Promise<T> => {
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
        subs.ssh.stageControllerUpgrade(s, subs.controllerFiles(), (l) => progress(`    ${l}`)),
      );
      staged.set(step.name, st);
    },
    async switchOver(step, progress) {
      await withSession(step.host, (s) =>
        subs.ssh.switchControllerRelease(s, staged.get(step.name)!, step.name, (l) => progress(`    ${l}`)),
      );
    },
    async rollBack(step, progress) {
      progress(`    restoring the previous release on ${step.host}`);
      await withSession(step.host, (s) => subs.ssh.rollbackControllerUpgrade(s, step.name));
    },
    async prune(step) {
      await withSession(step.host, (s) => subs.ssh.pruneControllerReleases(s));
    },
  };
}

/** The version of the controller bundle this CLI carries, asked of the bundle itself (`main.js version`). */
export function bundleVersion(subs: typeof Substrates): Promise<string> {
  return versionOf(subs.CONTROLLER_BUNDLE);
}

async function versionOf(bundle: string): Promise<string> {
  const { execFile } = await import("node:child_process");
  const out = await new Promise<string>((resolve, reject) => {
    execFile(process.execPath, [bundle, "version"], { timeout: 30_000 }, (err, stdout, stderr) =>
      err
        ? reject(
            new StewardError(
              "internal",
              `cannot read the version of ${bundle}: ${stderr.trim() || err.message} (npm run build makes it)`,
            ),
          )
        : resolve(stdout),
    );
  });
  const version = (JSON.parse(out) as { version?: string }).version;
  if (!version) throw new StewardError("internal", `${bundle} did not report a version`);
  return version;
}

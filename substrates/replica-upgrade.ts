/**
 * What a hosting kind offers `steward upgrade-controller` (./controller-hosting.ts `replicaUpgrade`):
 * how one replica of a controller it hosts is upgraded in place (a local data directory's releases,
 * a release pushed over SSH, a StatefulSet's image). The run itself (the plan, staging every replica
 * first, then replica by replica switch, gate and roll back, the record in the store) is the CLI's
 * and names no kind (cli/upgrade/); each kind's part lives in its folder.
 *
 * Why the CLI and not the controller leader drives this (also over SSH): the leader holds no SSH
 * access to the replicas' hosts (a spare's key is dropped once its replica joined, and the first
 * host's key was never given to the controller), and keeping root keys to every replica in the store
 * would widen what a stolen store gives away. The CLI also stands outside the cluster, so the run
 * survives every replica's restart, the leader's included, and sees the API as clients do. The code
 * lives here, beside what each kind installs, because it is the kind's knowledge; it runs in the CLI.
 */
import { execFile } from "node:child_process";
import { StewardError } from "../api/core";
import { CONTROLLER_BUNDLE } from "./controller-files";
import type { KubeConnection } from "./kubernetes/kubeconfig";

/** One replica to upgrade, as the controller reports it. */
export interface ReplicaStep {
  name: string;
  /** Where it runs (empty for a local controller). */
  host: string;
  addresses: string[];
  /** The version it runs now. */
  version: string;
  leader: boolean;
  /** A replica on a cloud instance (EC2, vSphere). */
  instance?: { id: string; zone?: string };
}

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

/** SSH access to replicas' hosts, as the caller's flags give it. */
export interface SshAccess {
  user: string;
  privateKey: string;
  /** Pinned host keys by host. */
  hostKeys: Record<string, string>;
  trustOnFirstUse: boolean;
}

/**
 * What the caller gives a kind's replica upgrade: the run, and the access its flags hold, read
 * only when the kind asks for it (so a kind that needs no kubeconfig never reads one).
 */
export interface ReplicaUpgradeContext {
  /** The version upgraded to: the release this client carries. */
  to: string;
  /** The controller's CA. */
  caCert: string;
  /** How long each replica may take to come back (a pod to be made again and turn Ready). */
  timeoutMs: number;
  /** SSH access to `hosts`, checked before anything changes (a dry run: no key read, nothing refused). */
  sshAccess(hosts: string[]): Promise<SshAccess>;
  /** The user's kubeconfig, at `context` (the one recorded at bootstrap) unless the caller names another. */
  kubeconfig(context?: string): KubeConnection;
  /** The whole new image the caller names, instead of the kind's default for `to`. */
  image(): string | undefined;
}

/** A kind's in-place upgrade of one controller, opened (and what it needs checked) before the plan is made. */
export interface ReplicaUpgrade {
  /** The upgrader for the plan's replicas: refuses, changing nothing, when one cannot be reached. */
  upgrader(steps: ReplicaStep[]): Promise<ReplicaUpgrader>;
  /** How the plan says the order (default: "one replica at a time"). */
  order?: string;
  /** Lines the plan prints after its first (the image it sets). */
  planLines?: string[];
  /** Where this client reaches the replicas now, when they announce addresses it cannot reach (pods' cluster DNS names). */
  reachable?(): Promise<string[]>;
  /** Every replica already runs the new version: says what is left as it was, tidies what the last run left (not on a dry run). */
  upToDate?(progress: (line: string) => void, dryRun: boolean): Promise<void>;
  /** After a run in which every replica was upgraded. */
  finish?(progress: (line: string) => void): Promise<void>;
  close?(): void;
}

/** The version of the controller bundle this client carries, asked of the bundle itself (`main.js version`). */
export function controllerBundleVersion(): Promise<string> {
  return bundleVersion(CONTROLLER_BUNDLE);
}

/** The version of the controller bundle `bundle`, asked of it. */
export async function bundleVersion(bundle: string): Promise<string> {
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

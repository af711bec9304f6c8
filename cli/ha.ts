/** What `bootstrap` (several hosts) and `enable-ha` share: the replica-count rule, settings, and following the growth. */
import { UsageError } from "clipanion";
import type { ClusterInfo, ControllerClient } from "../api";
import { StewardError } from "../api";
import { parseDuration } from "./wait";

/** Refuses replica counts other than 1, 3, 5 and 7, saying why. */
export function checkReplicaCount(n: number, what: string, given = String(n)): void {
  if ([1, 3, 5, 7].includes(n)) return;
  const why = Number.isInteger(n) && n % 2 === 0 ? "an even number of voters tolerates no more failures than one fewer" : n > 7 ? "etcd advises at most 7 voters" : "a cluster needs an odd number of voters";
  throw new UsageError(`${what} must be 1, 3, 5 or 7, not "${given}": ${why}`);
}

/** `--replace-after` as the API takes it (whole seconds), or nothing when not given. */
export function replaceAfterSetting(text: string | undefined): { replaceAfterSeconds?: number } {
  return text ? { replaceAfterSeconds: Math.round(parseDuration(text, "--replace-after") / 1000) } : {};
}

/** Resolves with the cluster once `voters` healthy voters exist; prints each new keeper message. */
export async function waitForVoters(client: ControllerClient, voters: number, timeoutMs: number, progress: (line: string) => void): Promise<ClusterInfo> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  let cluster: ClusterInfo | undefined;
  while (Date.now() < deadline) {
    // The controller restarts while it moves into etcd: keep asking.
    cluster = (await client.controllerInfo().catch(() => undefined))?.cluster ?? cluster;
    if (cluster) {
      const line = cluster.keeper.message;
      if (line && line !== last) { last = line; progress(`  ${line}`); }
      const healthy = cluster.members.filter((m) => m.hasVote && m.present).length;
      if (cluster.store === "etcd" && healthy >= voters && !cluster.members.some((m) => m.learner)) return cluster;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new StewardError("unavailable", `the controller did not reach ${voters} healthy voters within ${Math.round(timeoutMs / 1000)} s; last: ${last || "no answer"}. See steward show-controller`);
}

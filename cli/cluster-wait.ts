/** Following the controller cluster while it grows: what the quorum keeper does, until enough voters are healthy. */
import type { ClusterInfo, ControllerClient } from "../api";
import { StewardError } from "../api";

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

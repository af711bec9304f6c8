/**
 * The gate between two replicas of an upgrade: the restarted replica must be back as a healthy
 * voter at the expected version, with its etcd member caught up, and the whole cluster healthy,
 * before the next replica is touched.
 */
import type { ControllerClient, ControllerInfo } from "../../api/core";
import { ControllerClient as Client, StewardError, routes } from "../../api/core";
import type { ReplicaStep } from "./plan";

export interface GateOptions {
  client: ControllerClient;
  caCert: string;
  step: ReplicaStep;
  version: string;
  /** The replica's presence (`since`) before its restart: a replica still showing it has not restarted yet. */
  sinceBefore: string | undefined;
  timeoutMs: number;
  progress?: (line: string) => void;
  /** Where to reach the replica itself, when not at the addresses it announces (a pod's cluster DNS name from outside the cluster). */
  reach?: (step: ReplicaStep) => Promise<string[]>;
}

/** Resolves once the replica passes; throws what was last wrong when `timeoutMs` runs out. */
export async function waitForReplica(o: GateOptions): Promise<void> {
  const deadline = Date.now() + o.timeoutMs;
  let why = "it has not answered yet";
  let said = "";
  while (Date.now() < deadline) {
    const info = await o.client.controllerInfo().catch((err: Error) => {
      why = `the controller did not answer: ${err.message}`;
      return undefined;
    });
    if (info) {
      const problem = await replicaProblem(info, o);
      if (!problem) return;
      why = problem;
      if (why !== said) {
        said = why;
        o.progress?.(`    waiting: ${why}`);
      }
    }
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new StewardError(
    "deadline-exceeded",
    `replica ${o.step.name} did not come back healthy at ${o.version} within ${Math.round(o.timeoutMs / 1000)} s: ${why}`,
  );
}

/** What keeps the replica from passing, or undefined when it passes. */
async function replicaProblem(info: ControllerInfo, o: GateOptions): Promise<string | undefined> {
  const c = info.cluster;
  if (!c.quorum) return "the controller has no quorum";
  // A single replica on the embedded store takes a new id each time it starts: it is the newest replica.
  const replica =
    c.store === "embedded"
      ? [...info.replicas].sort((a, b) => b.since.localeCompare(a.since))[0]
      : info.replicas.find((r) => r.id === o.step.name);
  if (!replica || replica.since === o.sinceBefore) return "it has not published its presence since its restart";
  if (replica.version !== o.version) return `it runs ${replica.version ?? "an unknown version"}`;
  const member = c.members.find((m) => m.name === replica.id);
  if (!member?.hasVote) return "it is not a voting member";
  const down = c.members.filter((m) => m.hasVote && !m.present);
  if (down.length > 0) return `replica ${down.map((m) => m.name).join(", ")} is not present`;
  // Caught up: the replica itself has seen at least what the cluster had committed when it was asked.
  const clusterRevision = (await o.client.call(routes.health, {}).catch(() => undefined))?.revision;
  const addresses = o.reach ? await o.reach(o.step).catch(() => []) : replica.addresses;
  if (addresses.length === 0) return "it has no address to reach it at yet";
  const own = new Client({ addresses, caCert: o.caCert, timeoutMs: 3000 });
  try {
    const health = await own.call(routes.health, {}).catch(() => undefined);
    if (!health) return `it does not answer on ${addresses.join(", ")}`;
    if (health.version !== o.version) return `it answers as ${health.version}`;
    if (clusterRevision !== undefined && health.revision < clusterRevision)
      return `it is catching up (revision ${health.revision} of ${clusterRevision})`;
  } finally {
    own.close();
  }
  return undefined;
}

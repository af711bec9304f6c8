/**
 * What the Kubernetes provisioner and the agent in each pod agree on: the key of a pod's agent
 * configuration in its application's Secret, the port and paths of the agent's probes, and how a
 * pod's name gives its ordinal (unit N is pod ordinal N).
 */
import { StewardError } from "./errors";

/** The port the agent serves its probes on, in every pod (plain HTTP, inside the pod's network). */
export const POD_HEALTH_PORT = 38813;
/** Liveness: the agent and its hook loop are alive (never whether the controller is reachable). */
export const POD_LIVENESS_PATH = "/livez";
/** Readiness: this pod's unit is ready (its operator said so, or by default its workload is active). */
export const POD_READINESS_PATH = "/readyz";

/** The file (a key of the application's Secret, mounted as a directory) holding pod `ordinal`'s agent configuration. */
export function podAgentConfigKey(ordinal: number): string {
  if (!Number.isInteger(ordinal) || ordinal < 0)
    throw new StewardError("invalid-request", `a pod ordinal is a whole number from 0 (got ${ordinal})`);
  return `agent-${ordinal}.conf`;
}

/** The ordinal of a StatefulSet's pod: `db-2` → 2. */
export function ordinalOfPod(podName: string): number {
  const m = /-(\d+)$/.exec(podName);
  if (!m || m[1]!.length > 9) {
    throw new StewardError(
      "invalid-request",
      `pod name "${podName}" does not end in -<ordinal> (as a StatefulSet's pods do, e.g. "db-2"): set POD_NAME from the pod's metadata.name`,
    );
  }
  return Number(m[1]);
}

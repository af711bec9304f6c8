/**
 * The parts of a unit's pod that run an operator's workload containers (`containers:` in
 * operator.yaml), as Juju runs a sidecar charm's: an init container from the agent image places a
 * Node binary and the supervisor in an emptyDir every container mounts at /steward; each workload
 * container runs its image with the supervisor as its entrypoint (`/steward/node
 * /steward/supervisor.js`), which serves the agent on `/steward/run/<container>.sock` and its
 * container's probes on a port of its own. Liveness and startup ask the supervisor only, never the
 * services it runs nor the controller: a failing service is the supervisor's to restart.
 */
import type { WorkloadContainer } from "../../api/core";
import {
  SUPERVISOR_HEALTH_PATH,
  SUPERVISOR_INIT_CONTAINER,
  SUPERVISOR_NODE,
  SUPERVISOR_SCRIPT,
  WORKLOAD_SHARED_DIR,
  WORKLOAD_SOCKET_DIR,
  supervisorHealthPort,
  supervisorSocket,
} from "../../api/core";
import type { PodProbeSettings } from "./resources";

export const WORKLOAD_VOLUME = "steward-workload";

/** What the pod template gains for workload containers (nothing when there are none). */
type Manifest = { [key: string]: unknown };
type ContainerManifest = { name: string; image: string } & Manifest;
export interface WorkloadPodParts {
  initContainers: ContainerManifest[];
  volumes: Manifest[];
  /** Mounted in the agent container too: it reaches the supervisors' sockets there. */
  agentMounts: { name: string; mountPath: string }[];
  agentArgs: string[];
  containers: ContainerManifest[];
}

/** How the agent image's containers run (images/: user and group 10001). */
export const STEWARD_USER = { runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001 } as const;

export function workloadPodParts(
  agentImage: string,
  declared: Record<string, WorkloadContainer> | undefined,
  probes: PodProbeSettings,
): WorkloadPodParts {
  const names = Object.keys(declared ?? {}).sort();
  if (names.length === 0) return { initContainers: [], volumes: [], agentMounts: [], agentArgs: [], containers: [] };
  const mount = { name: WORKLOAD_VOLUME, mountPath: WORKLOAD_SHARED_DIR };
  return {
    initContainers: [
      {
        name: SUPERVISOR_INIT_CONTAINER,
        image: agentImage,
        args: ["--install-supervisor", WORKLOAD_SHARED_DIR],
        volumeMounts: [mount],
        securityContext: STEWARD_USER,
      },
    ],
    volumes: [{ name: WORKLOAD_VOLUME, emptyDir: {} }],
    agentMounts: [mount],
    agentArgs: ["--workload-sockets", WORKLOAD_SOCKET_DIR],
    containers: names.map((name, i) => {
      const c = declared![name]!;
      const port = supervisorHealthPort(i);
      const probe = (p: PodProbeSettings["liveness"]) => ({ httpGet: { path: SUPERVISOR_HEALTH_PATH, port }, ...p });
      return {
        name,
        image: c.image,
        command: [
          SUPERVISOR_NODE,
          SUPERVISOR_SCRIPT,
          "--socket",
          supervisorSocket(name),
          "--container",
          name,
          "--health-port",
          String(port),
        ],
        ...(c.ports?.length
          ? {
              ports: c.ports.map((p) => ({
                ...(p.name ? { name: p.name } : {}),
                containerPort: p.containerPort,
                protocol: p.protocol ?? "TCP",
              })),
            }
          : {}),
        ...(c.resources ? { resources: c.resources } : {}),
        volumeMounts: [mount],
        startupProbe: probe(probes.startup),
        livenessProbe: probe(probes.liveness),
      };
    }),
  };
}

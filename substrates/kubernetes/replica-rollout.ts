/**
 * How `steward upgrade-controller` upgrades a controller on Kubernetes (../replica-upgrade.ts): by the image of its
 * StatefulSet (controller-pods.ts), with the user's kubeconfig (the controller's own ServiceAccount
 * may only read its StatefulSet and scale it). The StatefulSet's RollingUpdate replaces pods from
 * the highest ordinal down, one at a time, once each is Ready; Ready is only its own /v1/health,
 * not the upgrade's gate (a voter again, caught up, every other voter present). So the rollout is
 * stepped with the partition ("pods with an ordinal >= partition are updated, those below are not,
 * and even if deleted are recreated at the previous version"): the new image goes in together with
 * a partition above every pod that still needs it, which replaces nothing; then the partition comes
 * down one ordinal at a time, and the CLI's gate passes each replica before the next step.
 *
 * On a failed gate the partition is raised back above the replica and its pod deleted: it is made
 * again at the StatefulSet's current revision (the image it ran before), so exactly that replica is
 * rolled back, as on other substrates, and the partition holds the rest of the rollout where it
 * stopped. Rolling the template's image back instead would also send back the replicas already
 * upgraded, each another restart. A run again (the fixed release, or the same one) resumes at the
 * highest pod not yet at the new version.
 */
import { ControllerClient, StewardError, routes } from "../../api/core";
import type { KubernetesControllerRecord } from "./controller-bootstrap";
import type { ReplicaStep, ReplicaUpgrade, ReplicaUpgradeContext, ReplicaUpgrader } from "../replica-upgrade";
import { CONTROLLER_API_PORT, CONTROLLER_LABELS } from "./controller-pods";
import { KubeApi, isConflict, isNotFound } from "./kube-api";
import type { KubeConnection } from "./kubeconfig";
import type { Pod, StatefulSet } from "./resources";
import { KUBE_RESOURCES } from "./resources";

/** The controller's container in its pods (controller-pods.ts). */
const CONTAINER = "controller";

export interface KubernetesTarget {
  namespace: string;
  statefulSet: string;
}

export interface KubernetesRolloutOptions {
  connection: KubeConnection;
  target: KubernetesTarget;
  /** The version upgraded to: the new image is the StatefulSet's repository with this tag. */
  to: string;
  /** The whole new image, instead of the repository with tag `to`. */
  image?: string;
  /** How long a pod may take to be made again and turn Ready. */
  timeoutMs: number;
  /** The controller's CA, to ask each pod's own API whether this client reaches it. */
  caCert: string;
}

/** The StatefulSet as found, and the upgrader that steps its rollout. */
export interface KubernetesRollout {
  /** The controller image its template has now. */
  image: string;
  /** The image the upgrade sets. */
  targetImage: string;
  /** Its partition now (0: a plain rolling update). */
  partition: number;
  upgrader: ReplicaUpgrader;
  /** Where this client reaches each pod's API now (pods' IPs: a recreated pod has a new one). */
  podAddresses(): Promise<string[]>;
  /** With every replica at the target: clears a partition left by an earlier run, if that replaces no pod. */
  tidy(progress: (line: string) => void): Promise<void>;
  close(): void;
}

/** The kubernetes hosting's replica upgrade: the rollout of the recorded StatefulSet, read with the user's kubeconfig. */
export async function kubernetesReplicaUpgrade(
  recorded: KubernetesControllerRecord,
  o: ReplicaUpgradeContext,
): Promise<ReplicaUpgrade> {
  const image = o.image();
  // The client keeps no cluster credential (bootstrap used the kubeconfig and let it go): the user's, at the recorded context.
  const rollout = await openKubernetesRollout({
    connection: o.kubeconfig(recorded.context),
    target: recorded,
    to: o.to,
    ...(image ? { image } : {}),
    timeoutMs: o.timeoutMs,
    caCert: o.caCert,
  });
  return {
    upgrader: async () => rollout.upgrader,
    order: "one pod at a time, the highest ordinal first (the StatefulSet's order)",
    planLines: [
      `image ${rollout.image} -> ${rollout.targetImage}${rollout.partition ? ` (partition now ${rollout.partition})` : ""}`,
    ],
    // The replicas announce cluster DNS names: this client follows the pods' IPs instead.
    reachable: () => rollout.podAddresses(),
    async upToDate(progress, dryRun) {
      if (rollout.image !== rollout.targetImage)
        progress(
          `Every replica runs ${o.to} although its StatefulSet's image is ${rollout.image}, not ${rollout.targetImage}: nothing was changed.`,
        );
      else if (!dryRun) await rollout.tidy(progress);
    },
    finish: (progress) => rollout.tidy(progress),
    close: () => rollout.close(),
  };
}

/** `<registry/repository>:<tag>`: the image's repository (its tag or digest dropped) with `tag`. */
export function imageWithTag(image: string, tag: string): string {
  const repo = image.replace(/@sha256:[0-9a-f]+$/, "").replace(/:[^:/]+$/, "");
  return `${repo}:${tag}`;
}

/** Reads the StatefulSet and refuses, changing nothing, what this command cannot roll. */
export async function openKubernetesRollout(o: KubernetesRolloutOptions): Promise<KubernetesRollout> {
  const R = KUBE_RESOURCES;
  const { namespace, statefulSet: name } = o.target;
  const api = new KubeApi(o.connection, { timeoutMs: 15_000 });
  const where = `StatefulSet ${namespace}/${name}`;
  const cluster = `the cluster of kubeconfig context "${o.connection.context}" (${o.connection.server})`;
  try {
    const sts = await api.find(R.statefulSets, name, { namespace }).catch((err: Error) => {
      throw new StewardError("unavailable", `cannot read ${where} in ${cluster}: ${err.message}`, {
        cause: err,
        reason: "kubernetes-unreachable",
      });
    });
    if (!sts)
      throw new StewardError(
        "not-found",
        `${where} is not in ${cluster}: give the kubeconfig and context of the cluster the controller was bootstrapped on (--kubeconfig, --kube-context)`,
      );
    const index = containerIndex(sts);
    if (index < 0)
      throw new StewardError(
        "invalid-request",
        `${where} has no container "${CONTAINER}": it is not a Steward controller's StatefulSet`,
      );
    const strategy = sts.spec?.updateStrategy?.type ?? "RollingUpdate";
    if (strategy !== "RollingUpdate")
      throw new StewardError(
        "invalid-request",
        `${where} has updateStrategy ${strategy}: this command steps a RollingUpdate by its partition; set it back (kubectl -n ${namespace} patch statefulset ${name} -p '{"spec":{"updateStrategy":{"type":"RollingUpdate"}}}') and run again`,
      );
    const image = sts.spec!.template.spec!.containers[index]!.image ?? "";
    const targetImage = o.image ?? imageWithTag(image, o.to);
    const partition = sts.spec?.updateStrategy?.rollingUpdate?.partition ?? 0;
    const state: Rollout = {
      api,
      namespace,
      name,
      targetImage,
      timeoutMs: o.timeoutMs,
      where,
      caCert: o.caCert,
    };
    return {
      image,
      targetImage,
      partition,
      upgrader: upgrader(state),
      async podAddresses() {
        const pods = await api.list(R.pods, {
          namespace,
          labelSelector: `${CONTROLLER_LABELS.instance}=${name}`,
        });
        return pods.items
          .filter((p) => p.status?.podIP && !p.metadata?.deletionTimestamp)
          .map((p) => `${p.status!.podIP}:${CONTROLLER_API_PORT}`);
      },
      async tidy(progress) {
        const now = await api.get(R.statefulSets, name, { namespace });
        const p = now.spec?.updateStrategy?.rollingUpdate?.partition ?? 0;
        if (p === 0) return;
        const s = now.status;
        // Clearing it must replace nothing: every pod already at the update revision.
        if (!s || s.updatedReplicas !== s.replicas || s.replicas !== (now.spec?.replicas ?? 1)) {
          progress(
            `${where} keeps partition ${p}: some of its pods are not at its template's revision (kubectl -n ${namespace} get pods -L controller-revision-hash)`,
          );
          return;
        }
        await setPartition(state, 0);
        progress(`${where}: partition ${p} cleared (every pod runs its template)`);
      },
      close: () => api.close(),
    };
  } catch (err) {
    api.close();
    throw err;
  }
}

interface Rollout {
  api: KubeApi;
  namespace: string;
  name: string;
  targetImage: string;
  timeoutMs: number;
  where: string;
  caCert: string;
}

function containerIndex(sts: StatefulSet): number {
  return (sts.spec?.template.spec?.containers ?? []).findIndex((c) => c.name === CONTAINER);
}

/** Pod ordinal of a replica: its host is its pod's stable DNS name, `<set>-<ordinal>.<set>-peers.…`. */
export function ordinalOf(step: Pick<ReplicaStep, "name" | "host">, statefulSet: string): number {
  const m = new RegExp(`^${statefulSet.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}-(0|[1-9][0-9]*)\\.`).exec(step.host);
  if (!m)
    throw new StewardError(
      "internal",
      `replica ${step.name} runs on ${step.host || "an unknown host"}, which is not a pod of StatefulSet ${statefulSet}`,
    );
  return Number(m[1]);
}

function upgrader(r: Rollout): ReplicaUpgrader {
  const R = KUBE_RESOURCES;
  const podName = (step: ReplicaStep): string => `${r.name}-${ordinalOf(step, r.name)}`;
  const reach = async (step: ReplicaStep): Promise<string[]> => {
    const pod = await r.api.find(R.pods, podName(step), { namespace: r.namespace }).catch(() => undefined);
    return pod?.status?.podIP ? [`${pod.status.podIP}:${CONTROLLER_API_PORT}`] : [];
  };
  const stageAll = async (steps: ReplicaStep[], progress: (line: string) => void): Promise<void> => {
    // The gate asks each replica itself, at its pod's IP: found out before any pod goes down, not at the first gate.
    for (const step of steps) {
      const addresses = await reach(step);
      const own = addresses.length
        ? new ControllerClient({ addresses, caCert: r.caCert, timeoutMs: 5000, retryUnavailableMs: 0 })
        : undefined;
      // Any answer will do (a 503 too): only a connection that never got one is refused.
      const answered = await own?.call(routes.health, {}).then(
        () => true,
        (err: unknown) => !(StewardError.isInstance(err) && err.reason === "controller-unreachable"),
      );
      own?.close();
      if (!answered)
        throw new StewardError(
          "unavailable",
          `this client cannot reach pod ${podName(step)} ${addresses.length ? `at ${addresses.join(", ")}` : "(it has no IP)"}: the upgrade asks each replica itself, at its pod's IP. Run it where pod IPs are routable (a node, a pod, a VPN into the pod network)`,
          { reason: "host-unreachable" },
        );
    }
    const sts = await r.api.get(R.statefulSets, r.name, { namespace: r.namespace });
    const index = containerIndex(sts);
    const image = sts.spec!.template.spec!.containers[index]!.image;
    // Above every pod still to upgrade: setting the image with it replaces no pod yet.
    const partition = Math.max(...steps.map((s) => ordinalOf(s, r.name))) + 1;
    const now = sts.spec?.updateStrategy?.rollingUpdate?.partition ?? 0;
    if (image === r.targetImage && now === partition) {
      progress(`${r.where} already has ${r.targetImage}, held at partition ${partition}`);
      return;
    }
    // One JSON patch, applied whole or not at all; its `test` operations refuse it (422) if the set changed since it was read.
    await r.api
      .patch(
        R.statefulSets,
        r.name,
        [
          { op: "test", path: "/metadata/resourceVersion", value: sts.metadata?.resourceVersion },
          { op: "test", path: `/spec/template/spec/containers/${index}/name`, value: CONTAINER },
          { op: "add", path: "/spec/updateStrategy", value: { type: "RollingUpdate", rollingUpdate: { partition } } },
          { op: "replace", path: `/spec/template/spec/containers/${index}/image`, value: r.targetImage },
        ],
        { namespace: r.namespace, type: "json" },
      )
      .catch((err: Error) => {
        throw new StewardError("unavailable", `cannot set the new image on ${r.where}: ${err.message}`, {
          cause: err,
          reason: "kubernetes-unreachable",
        });
      });
    progress(
      `${r.where}: image ${image} -> ${r.targetImage}, partition ${partition} (no pod is replaced until the partition comes down to it)`,
    );
  };

  /** Waits until pod `name` is a new pod (not `oldUid`), then until it is Ready; says what it waits for. */
  const waitForPod = async (
    name: string,
    oldUid: string | undefined,
    image: string | undefined,
    progress: (line: string) => void,
  ): Promise<void> => {
    const deadline = Date.now() + r.timeoutMs;
    let pod: Pod | undefined;
    let said = "";
    const say = (line: string): void => {
      if (line !== said) {
        said = line;
        progress(`    ${line}`);
      }
    };
    for (;;) {
      pod = await r.api.find(R.pods, name, { namespace: r.namespace }).catch(() => undefined);
      const made = pod && pod.metadata?.uid !== oldUid && !pod.metadata?.deletionTimestamp;
      if (made) {
        const running = pod!.spec?.containers.find((c) => c.name === CONTAINER)?.image;
        if (image && running !== image)
          throw new StewardError(
            "internal",
            `pod ${name} was made again with ${running}, not ${image}: is the partition of ${r.where} still set by this run? (kubectl -n ${r.namespace} get statefulset ${r.name} -o yaml)`,
          );
        say(`pod ${name} made again (${running}), waiting for it to be Ready`);
        if (pod!.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True")) {
          progress(`    pod ${name} is Ready`);
          return;
        }
      } else {
        say(
          pod ? `pod ${name} is being replaced` : `pod ${name} is gone, waiting for the StatefulSet to make it again`,
        );
      }
      if (Date.now() > deadline)
        throw new StewardError(
          "deadline-exceeded",
          `pod ${r.namespace}/${name} was not ${made ? "Ready" : "made again"} within ${Math.round(r.timeoutMs / 1000)} s${made ? `: ${containerState(pod!)}` : ""}`,
        );
      await new Promise((res) => setTimeout(res, 500));
    }
  };

  return {
    // The StatefulSet replaces pods from the highest ordinal down; a partition can only follow that.
    order: (steps) => [...steps].sort((a, b) => ordinalOf(b, r.name) - ordinalOf(a, r.name)),
    stageAll,
    async switchOver(step, progress) {
      const name = podName(step);
      const old = await r.api.get(R.pods, name, { namespace: r.namespace });
      await setPartition(r, ordinalOf(step, r.name));
      progress(`    partition ${ordinalOf(step, r.name)}: the StatefulSet controller replaces pod ${name}`);
      await waitForPod(name, old.metadata!.uid, r.targetImage, progress);
    },
    async rollBack(step, progress) {
      const name = podName(step);
      const ordinal = ordinalOf(step, r.name);
      // Above the pod, the rollout stops; below it, a pod deleted is made at the revision it ran before.
      await setPartition(r, ordinal + 1);
      const now = await r.api.find(R.pods, name, { namespace: r.namespace });
      progress(
        `    partition ${ordinal + 1}: no further pod is replaced; deleting pod ${name} so it is made again with the image it ran before`,
      );
      if (now)
        await r.api
          .delete(R.pods, name, { namespace: r.namespace, preconditions: { uid: now.metadata!.uid! } })
          .catch((err: unknown) => {
            if (!isNotFound(err) && !isConflict(err)) throw err;
          });
      await waitForPod(name, now?.metadata?.uid, undefined, progress);
    },
    async prune() {
      /* old images are the registry's and the nodes' to collect */
    },
    reach,
    hint(step) {
      return `kubectl -n ${r.namespace} describe pod ${podName(step)}; kubectl -n ${r.namespace} logs ${podName(step)} -c ${CONTAINER} --previous. ${r.where} is held at partition ${ordinalOf(step, r.name) + 1} with image ${r.targetImage}: no other pod is replaced until steward upgrade-controller runs again`;
    },
  };
}

async function setPartition(r: Rollout, partition: number): Promise<void> {
  await r.api
    .patch(
      KUBE_RESOURCES.statefulSets,
      r.name,
      { spec: { updateStrategy: { type: "RollingUpdate", rollingUpdate: { partition } } } },
      { namespace: r.namespace },
    )
    .catch((err: Error) => {
      throw new StewardError("unavailable", `cannot set the partition of ${r.where} to ${partition}: ${err.message}`, {
        cause: err,
        reason: "kubernetes-unreachable",
      });
    });
}

/** Why a pod's controller container is not ready, as kubectl shows it. */
function containerState(pod: Pod): string {
  const c = pod.status?.containerStatuses?.find((s) => s.name === CONTAINER);
  if (!c) return `its phase is ${pod.status?.phase ?? "unknown"}`;
  const describe = (s: Record<string, unknown> | undefined): string => {
    const [state, detail] = Object.entries(s ?? {})[0] ?? ["unknown", {}];
    const d = detail as { reason?: string; exitCode?: number; message?: string };
    return `${state}${d.reason ? ` (${d.reason}${d.exitCode !== undefined ? `, exit code ${d.exitCode}` : ""})` : ""}`;
  };
  return `its controller container is ${describe(c.state)}, restarted ${c.restartCount} time(s)${c.lastState && Object.keys(c.lastState).length ? `, last ${describe(c.lastState)}` : ""}`;
}

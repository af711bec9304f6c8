/**
 * The kubernetes kind's pod broker (substrates/brokers.ts `ApplicationBroker`): a model's namespace
 * and, per application, the objects of unit-pods.ts: a Secret with one agent configuration per unit
 * (written before the pods that read it), the Services, and a StatefulSet with one pod per unit
 * (unit N = pod N), with a claim per storage instance of each unit (storage-claims.ts). The
 * controller's pod provisioner decides what should exist; this writes it.
 *
 * Each object is written whole (or patched to its wanted form), and every call carries the caller's
 * signal, so a pass cut short (a deposed leader's) is finished by the next. No object names the
 * controller (labels: managed-by steward, the model's uuid, the application): a model that migrates
 * keeps its objects, and the target's first pass rewrites only the Secret.
 */
import type {
  ApplicationBroker,
  ApplicationPods,
  ApplicationPodsChange,
  ModelPodsRemoval,
  PodTarget,
  UnitPod,
  UnitPodSettings,
} from "../brokers";
import { podAgentConfigKey } from "../../api/core";
import { describeClusterFailure } from "./cluster-failures";
import { KubeApi, isAlreadyExists, isNotFound } from "./kube-api";
import type { KubeConnection } from "./kubeconfig";
import type { Pod, StatefulSet } from "./resources";
import { KUBE_RESOURCES as R } from "./resources";
import { CLAIM_ROLE_LABEL, checkStorageClass, claimNameOf } from "./storage-claims";
import {
  AGENT_STATE_TEMPLATE,
  LABELS,
  TEMPLATE_HASH,
  agentsSecretManifest,
  agentsSecretName,
  namespaceManifest,
  podName,
  selectorOf,
  serviceManifests,
  statefulSetManifest,
} from "./unit-pods";

/** Where a model's pods go: its cluster (from the model's credential) and its namespace there. */
export interface KubernetesPlacement {
  connection: KubeConnection;
  namespace: string;
}

type Target = PodTarget<KubernetesPlacement>;
type Signal = { signal?: AbortSignal };

const FIELD_MANAGER = "steward-controller";

export class KubernetesApplicationPods implements ApplicationBroker<KubernetesPlacement> {
  /** One client per placement, while it is used. */
  private readonly apis = new Map<KubernetesPlacement, KubeApi>();

  constructor(private readonly settings: UnitPodSettings) {}

  private api(p: KubernetesPlacement): KubeApi {
    let api = this.apis.get(p);
    if (!api) {
      api = new KubeApi(p.connection);
      this.apis.set(p, api);
    }
    return api;
  }

  async ensureModel({ model, placement }: Target, { signal }: Signal = {}): Promise<boolean> {
    const api = this.api(placement);
    if (await api.find(R.namespaces, placement.namespace, { signal })) return false;
    await api.create(R.namespaces, namespaceManifest(model, placement.namespace), { signal }).catch(alreadyThere);
    return true;
  }

  async ensureApplication(spec: ApplicationPods<KubernetesPlacement>, o: Signal = {}): Promise<ApplicationPodsChange> {
    const { signal } = o;
    const { model, app, replicas, placement } = spec;
    const { namespace } = placement;
    const api = this.api(placement);
    const names = { model, namespace, app };
    const have = await api.find(R.statefulSets, app, { namespace, signal });
    // A StorageClass the cluster lacks: refused before anything is made (claim templates never change after).
    if (!have)
      for (const s of spec.storage ?? [])
        await checkStorageClass(api, s.attributes, { signal, server: placement.connection.server });
    // Units first get their agent configuration, then their pods.
    if (replicas > 0) await this.writeAgentConfigs(spec, o);
    for (const svc of serviceManifests(names)) {
      if (!(await api.find(R.services, svc.metadata!.name!, { namespace, signal })))
        await api.create(R.services, svc, { signal }).catch(alreadyThere);
    }
    const want = statefulSetManifest({
      ...names,
      replicas,
      agentImage: this.settings.agentImage,
      ...(this.settings.probes ? { probes: this.settings.probes } : {}),
      ...(spec.containers ? { containers: spec.containers } : {}),
      ...(spec.storage?.length ? { storage: spec.storage } : {}),
    });
    if (!have) {
      await api.create(R.statefulSets, want, { signal });
      return { change: "made" };
    }
    const hash = want.metadata!.annotations![TEMPLATE_HASH];
    const from = have.spec?.replicas ?? 0;
    // Ordinals joining the set: a claim of the agent's state left there is a removed unit's (see dropAgentState).
    if (replicas > from) await this.dropAgentState(api, namespace, app, from, replicas, signal);
    let done: ApplicationPodsChange = { change: "none" };
    if (have.metadata?.annotations?.[TEMPLATE_HASH] !== hash) {
      await api.patch<StatefulSet>(
        R.statefulSets,
        app,
        { metadata: { annotations: { [TEMPLATE_HASH]: hash } }, spec: { replicas, template: want.spec!.template } },
        { namespace, type: "merge", fieldManager: FIELD_MANAGER, signal },
      );
      done = { change: "template" };
    } else if (from !== replicas) {
      await api.scale(R.statefulSets, app, replicas, { namespace, signal });
      done = { change: "scaled", from: have.spec?.replicas };
    }
    if (replicas < from) await this.dropAgentState(api, namespace, app, replicas, from, signal);
    return done;
  }

  /**
   * Deletes the agent-state claims of ordinals `from` ≤ N < `to`: the set keeps every claim when it
   * scales down (so that a unit's storage outlives it, storage-claims.ts), but a removed unit's hook
   * state must not greet a later unit that gets its number. Its storage claims stay, kept.
   */
  private async dropAgentState(
    api: KubeApi,
    namespace: string,
    app: string,
    from: number,
    to: number,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    for (let n = from; n < to; n++)
      await api
        .delete(R.persistentVolumeClaims, claimNameOf(AGENT_STATE_TEMPLATE, app, n), { namespace, signal })
        .catch(alreadyGone);
  }

  /** The application's Secret: read, the caller's configurations asked from what it holds, written when they differ. */
  private async writeAgentConfigs(spec: ApplicationPods<KubernetesPlacement>, { signal }: Signal): Promise<void> {
    const { model, app, placement } = spec;
    const { namespace } = placement;
    const api = this.api(placement);
    const have = await api.find(R.secrets, agentsSecretName(app), { namespace, signal });
    const held = new Map<number, string>();
    for (const [key, value] of Object.entries(have?.data ?? {})) {
      const ordinal = ordinalOfConfigKey(key);
      if (ordinal !== undefined) held.set(ordinal, Buffer.from(value, "base64").toString());
    }
    const secret = agentsSecretManifest({ model, namespace, app }, await spec.agentConfigs(held));
    if (have && sameData(have.data ?? {}, secret.data ?? {})) return;
    if (have)
      await api.replace(
        R.secrets,
        { ...secret, metadata: { ...secret.metadata, resourceVersion: have.metadata!.resourceVersion! } },
        { signal },
      );
    else await api.create(R.secrets, secret, { signal });
  }

  async applications({ model, placement }: Target, { signal }: Signal = {}): Promise<string[]> {
    const sets = await this.api(placement).list(R.statefulSets, {
      namespace: placement.namespace,
      labelSelector: selectorOf(model),
      signal,
    });
    return sets.items.flatMap((s) => s.metadata?.labels?.[LABELS.app] ?? []);
  }

  async unitPods(
    { model, placement }: Target,
    units: readonly { app: string; unit: number }[],
    { signal }: Signal = {},
  ): Promise<UnitPod[]> {
    const { namespace } = placement;
    const pods = await this.api(placement).list(R.pods, { namespace, labelSelector: selectorOf(model), signal });
    const byName = new Map(pods.items.map((p) => [p.metadata!.name!, p]));
    return units.map(({ app, unit }) => {
      const name = podName(app, unit);
      const pod = byName.get(name);
      return pod
        ? unitPodOf(pod, namespace)
        : { id: `${namespace}/${name}`, state: "pending", exists: false, running: false };
    });
  }

  async removeApplication({ model, placement }: Target, app: string, { signal }: Signal = {}): Promise<void> {
    const { namespace } = placement;
    const api = this.api(placement);
    await api.delete(R.statefulSets, app, { namespace, propagationPolicy: "Foreground", signal }).catch(alreadyGone);
    for (const svc of serviceManifests({ model, namespace, app }))
      await api.delete(R.services, svc.metadata!.name!, { namespace, signal }).catch(alreadyGone);
    await api.delete(R.secrets, agentsSecretName(app), { namespace, signal }).catch(alreadyGone);
    // The agents' state goes with the application; its storage claims stay, kept (their instances outlive it).
    const claims = await api.list(R.persistentVolumeClaims, {
      namespace,
      labelSelector: `${selectorOf(model, app)},${CLAIM_ROLE_LABEL}=agent-state`,
      signal,
    });
    for (const c of claims.items)
      await api.delete(R.persistentVolumeClaims, c.metadata!.name!, { namespace, signal }).catch(alreadyGone);
  }

  /** The namespace goes when it was made for the model (its label says so), else the model's objects in it. */
  async removeModel(target: Target, { signal }: Signal = {}): Promise<ModelPodsRemoval> {
    const { model, placement } = target;
    const api = this.api(placement);
    const ns = await api.find(R.namespaces, placement.namespace, { signal });
    if (!ns) return { removed: "nothing" };
    if (ns.metadata?.labels?.[LABELS.model] === model) {
      await api.delete(R.namespaces, placement.namespace, { signal }).catch(alreadyGone);
      return { removed: "space" };
    }
    const sets = await api.list(R.statefulSets, {
      namespace: placement.namespace,
      labelSelector: selectorOf(model),
      signal,
    });
    const applications = sets.items.map((s) => s.metadata!.name!);
    for (const app of applications) await this.removeApplication(target, app, { signal });
    return { removed: "applications", applications };
  }

  where(p: KubernetesPlacement): { server: string; namespace: string } {
    return { server: p.connection.server, namespace: p.namespace };
  }

  describeFailure(err: unknown, p: KubernetesPlacement): string {
    return describeClusterFailure(err, p.connection.server);
  }

  release(p: KubernetesPlacement): void {
    this.apis.get(p)?.close();
    this.apis.delete(p);
  }

  close(): void {
    for (const api of this.apis.values()) api.close();
    this.apis.clear();
  }
}

function unitPodOf(pod: Pod, namespace: string): UnitPod {
  const ready = pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True");
  const phase = pod.metadata?.deletionTimestamp ? "Terminating" : (pod.status?.phase ?? "Pending");
  return {
    id: `${namespace}/${pod.metadata!.name!}`,
    state: phase === "Running" ? (ready ? "running, ready" : "running, not ready") : phase.toLowerCase(),
    ...(pod.status?.podIP ? { address: pod.status.podIP } : {}),
    exists: true,
    running: pod.status?.phase === "Running",
  };
}

/** The unit number of a Secret key written by podAgentConfigKey (undefined for any other key). */
function ordinalOfConfigKey(key: string): number | undefined {
  const m = /(\d{1,9})/.exec(key);
  if (!m) return undefined;
  const ordinal = Number(m[1]);
  return podAgentConfigKey(ordinal) === key ? ordinal : undefined;
}

function sameData(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => a[k] === b[k]);
}

function alreadyThere(err: unknown): void {
  if (!isAlreadyExists(err)) throw err;
}

function alreadyGone(err: unknown): void {
  if (!isNotFound(err)) throw err;
}

/**
 * The kubernetes kind's volume broker (issue 32): a storage instance is a PersistentVolumeClaim of
 * the application's StatefulSet (storage-claims.ts), `storage-data-0-<app>-<N>` for unit N, made by
 * the StatefulSet when it makes the unit's pod and kept when the pod or the unit goes. Attaching
 * records which instance a claim holds (an annotation, so a claim is never taken by two instances)
 * and answers where the unit's pod mounts it; the pod itself does the mounting, so there is no
 * machine half. A kept instance comes back with its unit number: the claim's name carries the
 * ordinal, and the pod that next has that ordinal mounts it (the controller gives a new unit of that
 * number the kept instance, storage-ops.ts). Detaching leaves the claim as it is (kept); destroying
 * deletes it, and its volume goes by its class's reclaim policy.
 */
import type { MachineRef } from "../brokers";
import type { VolumeBroker, VolumeDeps, VolumeSpec } from "../volumes";
import type { KubernetesPlacement } from "./application-pods";
import { KubeApi, isNotFound } from "./kube-api";
import type { PersistentVolumeClaim } from "./resources";
import { KUBE_RESOURCES as R } from "./resources";
import { AGENT_CONTAINER } from "./unit-pods";
import { STORAGE_ID_ANNOTATION, checkStorageClass, claimNameOf, storageTemplateName } from "./storage-claims";

export class KubernetesVolumes implements VolumeBroker {
  constructor(private readonly deps: VolumeDeps) {}

  /** A client for the model's cluster, for one call's length. */
  private async withApi<T>(model: string, fn: (api: KubeApi, p: KubernetesPlacement) => Promise<T>): Promise<T> {
    if (!this.deps.placement) throw new Error("the controller gives the kubernetes volume broker no placement");
    const placement = (await this.deps.placement(model)) as KubernetesPlacement;
    const api = new KubeApi(placement.connection);
    try {
      return await fn(api, placement);
    } finally {
      api.close();
    }
  }

  async attach(v: VolumeSpec, _m: MachineRef): Promise<{ location: string; handle: Record<string, string> }> {
    const unit = /^(.+)\/(\d+)$/.exec(v.unit ?? "");
    if (!unit) throw new Error(`storage ${v.id} is attached to no unit`);
    const [, app, n] = unit as unknown as [string, string, string];
    const ordinal = Number(n);
    const store = v.id.slice(0, v.id.lastIndexOf("/"));
    return this.withApi(v.model, async (api, { namespace, connection }) => {
      if (!v.handle?.claim) await checkStorageClass(api, v.attributes ?? {}, { server: connection.server });
      const sts = await api.find(R.statefulSets, app, { namespace });
      if (!sts) throw new Error(`waiting for application ${app}'s StatefulSet`);
      const agent = (sts.spec?.template.spec?.containers ?? []).find((c) => c.name === AGENT_CONTAINER);
      const mounts = new Map(
        ((agent?.volumeMounts ?? []) as { name: string; mountPath: string }[]).map((m) => [m.name, m.mountPath]),
      );
      // The unit's places for this store: the templates storage-data-0, -1, … the set has.
      const places: { claim: string; location: string }[] = [];
      for (let slot = 0; ; slot++) {
        const template = storageTemplateName(store, slot);
        const location = mounts.get(template);
        if (!location || !sts.spec?.volumeClaimTemplates?.some((t) => t.metadata?.name === template)) break;
        places.push({ claim: claimNameOf(template, app, ordinal), location });
      }
      if (places.length === 0) throw new Error(`application ${app}'s pods mount no "${store}" storage`);
      const claims = await Promise.all(
        places.map((p) => api.find(R.persistentVolumeClaims, p.claim, { namespace }).then((c) => ({ ...p, c }))),
      );
      const holder = (c: PersistentVolumeClaim | undefined) => c?.metadata?.annotations?.[STORAGE_ID_ANNOTATION];
      let chosen = claims.find((p) => p.c && holder(p.c) === v.id);
      if (!chosen && v.handle?.claim)
        throw new Error(
          places.some((p) => p.claim === v.handle!.claim)
            ? `storage ${v.id}'s claim ${v.handle.claim} is gone from namespace ${namespace}`
            : `storage ${v.id} is kept in claim ${v.handle.claim}, which only the pod of its own unit number mounts, not ${app}-${ordinal}`,
        );
      if (!chosen) {
        const free = claims.find((p) => p.c && !p.c.metadata?.deletionTimestamp && holder(p.c) === undefined);
        if (!free) {
          if (claims.some((p) => !p.c)) throw new Error(`waiting for pod ${app}-${ordinal}'s claims`);
          throw new Error(
            `every "${store}" claim of pod ${app}-${ordinal} holds other storage (${claims.map((p) => holder(p.c)).join(", ")})`,
          );
        }
        // Replaced whole at the version read: two instances never take one claim.
        const c = free.c!;
        await api.replace(
          R.persistentVolumeClaims,
          {
            ...c,
            metadata: { ...c.metadata, annotations: { ...c.metadata?.annotations, [STORAGE_ID_ANNOTATION]: v.id } },
          },
          { namespace },
        );
        chosen = free;
      }
      const c = chosen.c!;
      if (c.status?.phase !== "Bound")
        throw new Error(
          `claim ${chosen.claim} is ${c.status?.phase ?? "Pending"}, not bound to a volume yet${c.spec?.storageClassName ? ` (storage class ${c.spec.storageClassName})` : ""}`,
        );
      return {
        location: chosen.location,
        handle: { claim: chosen.claim, namespace, ...(c.spec?.volumeName ? { volume: c.spec.volumeName } : {}) },
      };
    });
  }

  /** The claim stays as it is, kept by the StatefulSet's retention policy. */
  async detach(v: VolumeSpec, _m: MachineRef): Promise<Record<string, string>> {
    return v.handle ?? {};
  }

  async destroy(v: VolumeSpec): Promise<void> {
    const claim = v.handle?.claim;
    if (!claim) return;
    await this.withApi(v.model, async (api, { namespace }) => {
      const c = await api.find(R.persistentVolumeClaims, claim, { namespace });
      // Only the claim that holds this instance, whatever the handle says.
      if (!c || c.metadata?.annotations?.[STORAGE_ID_ANNOTATION] !== v.id) return;
      await api
        .delete(R.persistentVolumeClaims, claim, { namespace, preconditions: { uid: c.metadata!.uid! } })
        .catch((err: unknown) => {
          if (!isNotFound(err)) throw err;
        });
    });
  }
}

/**
 * The StatefulSet controller of the fake API server, after the StatefulSet concepts page
 * (kubernetes.io/docs/concepts/workloads/controllers/statefulset):
 * - pods `<name>-<ordinal>` for ordinals `spec.ordinals.start` (0) … start+replicas-1, labelled
 *   `statefulset.kubernetes.io/pod-name`, `apps.kubernetes.io/pod-index` and
 *   `controller-revision-hash`, owned by the set (controller ownerReference), with `hostname` = pod
 *   name and `subdomain` = `spec.serviceName` (the stable network identity);
 * - one PVC per volumeClaimTemplate and ordinal, `<template>-<name>-<ordinal>`, kept when its pod
 *   goes (a recreated pod gets the same claim); `persistentVolumeClaimRetentionPolicy` Delete is
 *   done through ownerReferences, as upstream: whenDeleted → the set owns the claim, whenScaled →
 *   the condemned pod does, so the garbage collector removes it;
 * - podManagementPolicy OrderedReady: create 0..N-1 one at a time, each only once its predecessors
 *   are Running and Ready; scale down from the highest ordinal, one at a time, only when the others
 *   are healthy. Parallel: create and delete all at once (scale-down still highest ordinal first);
 * - a pod that is deleted (or Failed) is recreated with the same name and claims and a new uid;
 * - updateStrategy RollingUpdate: pods at an old revision are deleted from the highest ordinal down
 *   to `partition`, one at a time, waiting for each to come back Running and Ready; OnDelete: never;
 *   a pod below the partition that is deleted comes back at the current revision (the template it
 *   ran before the update: "even if they are deleted, they will be recreated at the previous
 *   version"), one at or above it at the update revision;
 * - status as the controller computes it: `replicas` (pods created, terminating ones included),
 *   `readyReplicas`, `availableReplicas` (ready for minReadySeconds), `currentReplicas` and
 *   `updatedReplicas` (by revision), `currentRevision`, `updateRevision`, `observedGeneration`.
 * Claims are made here and bound by the persistent volume controller (persistentvolume-controller.ts);
 * a claim already there by its name (made beforehand, or kept) is used as it is. Not modelled: ControllerRevision objects (the revision is a hash of the template,
 * and the templates of revisions seen are kept in memory instead), adoption of orphaned pods,
 * maxUnavailable.
 */
import { createHash } from "node:crypto";
import { kindFor } from "./kinds";
import type { KubeObject } from "./kinds";
import { podReady } from "./kubelet";
import type { ApiState, StoreEvent } from "./state";
import { WorkQueue } from "./work-queue";

const STS = kindFor("apps", "v1", "statefulsets")!;
const PODS = kindFor("", "v1", "pods")!;
const PVCS = kindFor("", "v1", "persistentvolumeclaims")!;
const ALPHABET = "bcdfghjklmnpqrstvwxz2456789";

/** The revision name of a template: `<set>-<hash>` (opaque to clients, as upstream's). */
export function revisionOf(sts: KubeObject): string {
  const h = createHash("sha256")
    .update(JSON.stringify(sts.spec?.template ?? {}))
    .digest();
  return `${sts.metadata.name}-${Array.from(h.subarray(0, 10), (b) => ALPHABET[b % ALPHABET.length]).join("")}`;
}

const ordinalOf = (set: string, pod: string): number | undefined => {
  const m = new RegExp(`^${set.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}-(0|[1-9][0-9]*)$`).exec(pod);
  return m ? Number(m[1]) : undefined;
};
const terminating = (p: KubeObject): boolean => !!p.metadata.deletionTimestamp;
const healthy = (p: KubeObject): boolean => !terminating(p) && p.status?.phase === "Running" && podReady(p);
const finished = (p: KubeObject): boolean => p.status?.phase === "Failed" || p.status?.phase === "Succeeded";

export class StatefulSetController {
  private readonly work = new WorkQueue("fake StatefulSet controller", (key) => this.sync(key));
  /** Each revision's template, by `<namespace>/<revision>` (what upstream keeps in ControllerRevisions). */
  private readonly templates = new Map<string, unknown>();
  private readonly unsubscribe: () => void;

  constructor(private readonly state: ApiState) {
    this.unsubscribe = state.subscribe((e) => this.observe(e));
    for (const s of state.list(STS)) this.enqueue(`${s.metadata.namespace}/${s.metadata.name}`);
  }

  stop(): void {
    this.work.stop();
    this.unsubscribe();
  }

  private observe(e: StoreEvent): void {
    if (e.kind === STS) this.enqueue(`${e.object.metadata.namespace}/${e.object.metadata.name}`);
    else if (e.kind === PODS || e.kind === PVCS) {
      const owner = e.object.metadata.ownerReferences?.find(
        (r) => r.controller && r.kind === "StatefulSet" && r.apiVersion === "apps/v1",
      );
      if (owner) this.enqueue(`${e.object.metadata.namespace}/${owner.name}`);
    }
  }

  private enqueue(key: string, afterMs = 0): void {
    this.work.add(key, afterMs);
  }

  private sync(key: string): void {
    const [ns, name] = key.split("/") as [string, string];
    const sts = this.state.find(STS, ns, name);
    if (!sts || terminating(sts)) return; // the garbage collector deletes its pods
    const uid = sts.metadata.uid!;
    const spec = sts.spec;
    const replicas: number = spec.replicas ?? 1;
    const start: number = spec.ordinals?.start ?? 0;
    const monotonic = spec.podManagementPolicy !== "Parallel";
    const updateRevision = revisionOf(sts);
    this.templates.set(`${ns}/${updateRevision}`, structuredClone(spec.template ?? {}));
    const partition: number =
      spec.updateStrategy?.type === "RollingUpdate" ? (spec.updateStrategy.rollingUpdate?.partition ?? 0) : 0;
    const currentRevision: string = sts.status?.currentRevision ?? updateRevision;
    // Below the partition a pod is made at the current revision, if its template is known.
    const revisionFor = (ord: number): string =>
      ord < partition && this.templates.has(`${ns}/${currentRevision}`) ? currentRevision : updateRevision;
    const owned = this.state.list(PODS, ns, (p) =>
      (p.metadata.ownerReferences ?? []).some((r) => r.controller && r.uid === uid),
    );
    const byOrdinal = new Map<number, KubeObject>();
    const condemned: KubeObject[] = [];
    for (const p of owned) {
      const ord = ordinalOf(name, p.metadata.name!);
      if (ord !== undefined && ord >= start && ord < start + replicas) byOrdinal.set(ord, p);
      else condemned.push(p);
    }
    condemned.sort((a, b) => (ordinalOf(name, b.metadata.name!) ?? -1) - (ordinalOf(name, a.metadata.name!) ?? -1));

    const work = (): void => {
      // Failed or Succeeded pods are deleted, to be recreated.
      for (const p of byOrdinal.values())
        if (finished(p) && !terminating(p))
          this.state.delete(PODS, ns, p.metadata.name!, { preconditions: { uid: p.metadata.uid } });
      for (let ord = start; ord < start + replicas; ord++) {
        const p = byOrdinal.get(ord);
        if (!p) {
          this.createPod(sts, ord, revisionFor(ord));
          if (monotonic) return;
        } else if (monotonic && !healthy(p)) return;
      }
      for (const p of condemned) {
        if (terminating(p)) {
          if (monotonic) return;
          continue;
        }
        if (monotonic && [...byOrdinal.values(), ...condemned].some((o) => o !== p && !healthy(o))) return;
        this.condemn(sts, p);
        if (monotonic) return;
      }
      // Rolling update: highest ordinal first, one at a time, all others healthy.
      if (
        spec.updateStrategy?.type !== "RollingUpdate" ||
        byOrdinal.size !== replicas ||
        [...byOrdinal.values()].some((p) => !healthy(p)) ||
        condemned.length
      )
        return;
      for (let ord = start + replicas - 1; ord >= Math.max(start, partition); ord--) {
        const p = byOrdinal.get(ord)!;
        if (p.metadata.labels?.["controller-revision-hash"] !== updateRevision) {
          this.state.delete(PODS, ns, p.metadata.name!, { preconditions: { uid: p.metadata.uid } });
          return;
        }
      }
    };
    work();
    this.updateStatus(sts, updateRevision);
  }

  private createPod(sts: KubeObject, ord: number, revision: string): void {
    const set = sts.metadata.name!,
      ns = sts.metadata.namespace!;
    const podName = `${set}-${ord}`;
    const tpl = (this.templates.get(`${ns}/${revision}`) ?? sts.spec.template ?? {}) as KubeObject["spec"];
    const claims: KubeObject[] = sts.spec.volumeClaimTemplates ?? [];
    for (const c of claims) this.ensureClaim(sts, c, ord);
    const claimNames = new Set(claims.map((c) => c.metadata?.name));
    const volumes = [
      ...((tpl.spec?.volumes ?? []) as { name: string }[]).filter((v) => !claimNames.has(v.name)),
      ...claims.map((c) => ({
        name: c.metadata.name!,
        persistentVolumeClaim: { claimName: `${c.metadata.name}-${set}-${ord}` },
      })),
    ];
    this.state.create(PODS, ns, {
      metadata: {
        name: podName,
        namespace: ns,
        labels: {
          ...tpl.metadata?.labels,
          "statefulset.kubernetes.io/pod-name": podName,
          "apps.kubernetes.io/pod-index": String(ord),
          "controller-revision-hash": revision,
        },
        ...(tpl.metadata?.annotations ? { annotations: tpl.metadata.annotations } : {}),
        ownerReferences: [
          {
            apiVersion: "apps/v1",
            kind: "StatefulSet",
            name: set,
            uid: sts.metadata.uid!,
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec: {
        ...tpl.spec,
        hostname: podName,
        ...(sts.spec.serviceName ? { subdomain: sts.spec.serviceName } : {}),
        ...(volumes.length ? { volumes } : {}),
      },
    });
  }

  private ensureClaim(sts: KubeObject, tpl: KubeObject, ord: number): void {
    const set = sts.metadata.name!,
      ns = sts.metadata.namespace!;
    const claimName = `${tpl.metadata.name}-${set}-${ord}`;
    if (this.state.find(PVCS, ns, claimName)) return;
    const whenDeleted = sts.spec.persistentVolumeClaimRetentionPolicy?.whenDeleted === "Delete";
    // The persistent volume controller binds it (persistentvolume-controller.ts).
    this.state.create(PVCS, ns, {
      metadata: {
        name: claimName,
        namespace: ns,
        labels: { ...tpl.metadata?.labels, ...sts.spec.selector?.matchLabels },
        ...(whenDeleted
          ? {
              ownerReferences: [
                {
                  apiVersion: "apps/v1",
                  kind: "StatefulSet",
                  name: set,
                  uid: sts.metadata.uid!,
                  blockOwnerDeletion: true,
                },
              ],
            }
          : {}),
      },
      spec: tpl.spec,
    });
  }

  /** Deletes a pod being scaled away (its claims first made its dependents if whenScaled is Delete). */
  private condemn(sts: KubeObject, pod: KubeObject): void {
    const ns = sts.metadata.namespace!;
    if (sts.spec.persistentVolumeClaimRetentionPolicy?.whenScaled === "Delete") {
      for (const v of (pod.spec?.volumes ?? []) as { persistentVolumeClaim?: { claimName: string } }[]) {
        const claim = v.persistentVolumeClaim && this.state.find(PVCS, ns, v.persistentVolumeClaim.claimName);
        if (!claim) continue;
        this.state.mutate(PVCS, ns, claim.metadata.name!, claim.metadata.uid!, (c) => {
          c.metadata.ownerReferences = [
            ...(c.metadata.ownerReferences ?? []).filter((r) => r.uid !== pod.metadata.uid),
            { apiVersion: "v1", kind: "Pod", name: pod.metadata.name!, uid: pod.metadata.uid! },
          ];
        });
      }
    }
    this.state.delete(PODS, ns, pod.metadata.name!, { preconditions: { uid: pod.metadata.uid } });
  }

  private updateStatus(sts: KubeObject, updateRevision: string): void {
    const ns = sts.metadata.namespace!,
      uid = sts.metadata.uid!;
    const pods = this.state.list(PODS, ns, (p) =>
      (p.metadata.ownerReferences ?? []).some((r) => r.controller && r.uid === uid),
    );
    const minReady: number = sts.spec.minReadySeconds ?? 0;
    const currentRevision: string = sts.status?.currentRevision ?? updateRevision;
    let replicas = 0,
      ready = 0,
      available = 0,
      current = 0,
      updated = 0,
      recheck = 0;
    for (const p of pods) {
      const created = !!p.status?.phase;
      if (created) replicas++;
      if (p.status?.phase === "Running" && podReady(p)) {
        ready++;
        const since =
          Date.parse(p.status.conditions.find((c: { type: string }) => c.type === "Ready")?.lastTransitionTime ?? "") ||
          0;
        const wait = since + minReady * 1000 - Date.now();
        if (minReady === 0 || wait <= 0) available++;
        else recheck = Math.max(recheck, wait);
      }
      if (created && !terminating(p)) {
        const rev = p.metadata.labels?.["controller-revision-hash"];
        if (rev === currentRevision) current++;
        if (rev === updateRevision) updated++;
      }
    }
    const want: number = sts.spec.replicas ?? 1;
    // The update is complete when every wanted pod runs the new revision: it becomes current.
    const done = updated === want && replicas === want;
    this.state.updateStatus(STS, ns, sts.metadata.name!, uid, (s) => {
      s.observedGeneration = sts.metadata.generation;
      s.replicas = replicas;
      s.readyReplicas = ready;
      s.availableReplicas = available;
      s.currentReplicas = done ? updated : current;
      s.updatedReplicas = updated;
      s.currentRevision = done ? updateRevision : currentRevision;
      s.updateRevision = updateRevision;
      s.collisionCount ??= 0;
      // These are omitted when zero (omitempty), as the real API writes them.
      for (const f of ["readyReplicas", "currentReplicas", "updatedReplicas"]) if (!s[f]) delete s[f];
    });
    if (recheck) this.enqueue(`${ns}/${sts.metadata.name}`, recheck + 10);
  }
}

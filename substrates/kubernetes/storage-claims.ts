/**
 * How an application's storage is laid out on Kubernetes (issue 32), shared by the pod broker that
 * writes the StatefulSet and the volume broker that reports where each instance is: one claim
 * template per store and place in the unit (`storage-data-0`), so unit N's instances are the claims
 * `storage-data-0-<app>-N` that the StatefulSet makes (upstream's `<template>-<set>-<ordinal>`),
 * mounted at the same path in the agent's container (where hooks run) and in every workload
 * container. The StatefulSet keeps claims when it scales down or goes (retention policy Retain): a
 * unit's claim outlives its pod and its unit, and the pod that next takes the ordinal mounts it, so
 * an application scaled to 0 and back finds its data (juju#23335). Pure functions, no I/O, except
 * {@link checkStorageClass}.
 */
import { createHash } from "node:crypto";
import type { PodStorage } from "../brokers";
import type { KubeApi } from "./kube-api";
import { KubeApiError } from "./kube-api";
import type { PersistentVolumeClaim } from "./resources";
import { KUBE_RESOURCES as R } from "./resources";

/** The pool attribute naming the claims' StorageClass (absent: the cluster's default class). */
export const STORAGE_CLASS_ATTRIBUTE = "storage-class";
const isForbidden = (err: unknown): boolean => err instanceof KubeApiError && err.code === 403;

/** Where an instance is mounted when the operator names no location. */
export const DEFAULT_STORAGE_ROOT = "/var/lib/steward/storage";
/** On a claim: the storage instance (`data/0`) it holds, written when the instance is attached to it. */
export const STORAGE_ID_ANNOTATION = "steward.io/storage";
/** On a claim template (so on its claims): what the claim is for, `agent-state` or `storage`. */
export const CLAIM_ROLE_LABEL = "steward.io/claim";
export const DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class";

/** The claim template (and pod volume) of `store`'s instance at place `slot` of a unit: a DNS label. */
export function storageTemplateName(store: string, slot: number): string {
  const name = `storage-${store}-${slot}`;
  if (name.length <= 63) return name;
  const hash = createHash("sha256").update(name).digest("hex").slice(0, 8);
  return `storage-${store.slice(0, 63 - 18 - String(slot).length)}-${hash}-${slot}`;
}

/** The claim the StatefulSet makes from a template for the pod of `ordinal` (upstream's rule). */
export const claimNameOf = (template: string, app: string, ordinal: number): string => `${template}-${app}-${ordinal}`;

/** Where the instance at place `slot` of `store` is mounted in a unit's pod. */
export function storageMountPath(store: Pick<PodStorage, "name" | "location" | "multiple">, slot: number): string {
  const base = (store.location ?? `${DEFAULT_STORAGE_ROOT}/${store.name}`).replace(/\/+$/, "") || "/";
  return store.multiple ? `${base === "/" ? "" : base}/${slot}` : base;
}

/** Every store's claim templates and mounts, one per instance a unit has. */
export function storageParts(
  stores: readonly PodStorage[],
  labels: Record<string, string>,
): { templates: PersistentVolumeClaim[]; mounts: { name: string; mountPath: string }[] } {
  const templates: PersistentVolumeClaim[] = [];
  const mounts: { name: string; mountPath: string }[] = [];
  for (const s of [...stores].sort((a, b) => a.name.localeCompare(b.name)))
    for (let slot = 0; slot < s.count; slot++) {
      const name = storageTemplateName(s.name, slot);
      const storageClass = s.attributes[STORAGE_CLASS_ATTRIBUTE];
      templates.push({
        metadata: { name, labels: { ...labels, [CLAIM_ROLE_LABEL]: "storage" } },
        spec: {
          accessModes: ["ReadWriteOnce"],
          resources: { requests: { storage: `${s.size}Mi` } },
          ...(storageClass ? { storageClassName: storageClass } : {}),
        },
      });
      mounts.push({ name, mountPath: storageMountPath(s, slot) });
    }
  return { templates, mounts };
}

/**
 * Refuses a StorageClass the cluster does not have, or, when none is named, a cluster with no
 * default class: its claims would stay Pending and the unit's pod with them. Asked before anything
 * is made, so nothing is left half-made.
 */
export async function checkStorageClass(
  api: KubeApi,
  attributes: Record<string, string>,
  o: { signal?: AbortSignal; server: string },
): Promise<void> {
  const named = attributes[STORAGE_CLASS_ATTRIBUTE];
  if (named) {
    // Not allowed to read classes (cluster-wide): not checked beforehand; a wrong one shows as a Pending claim.
    const cls = await api.find(R.storageClasses, named, o.signal ? { signal: o.signal } : {}).catch((err: unknown) => {
      if (isForbidden(err)) return "unknown" as const;
      throw err;
    });
    if (!cls) {
      const known = await api
        .list(R.storageClasses, o.signal ? { signal: o.signal } : {})
        .then((l) => l.items.map((c) => c.metadata?.name ?? "").filter(Boolean))
        .catch(() => []);
      throw new Error(
        `storage class "${named}" does not exist on cluster ${o.server}${known.length ? ` (it has: ${known.join(", ")})` : ""}: name one of its classes in the pool's ${STORAGE_CLASS_ATTRIBUTE} attribute`,
      );
    }
    return;
  }
  // Not allowed to list classes: the claims will show whether a default exists.
  const classes = await api.list(R.storageClasses, o.signal ? { signal: o.signal } : {}).catch(() => undefined);
  if (classes && !classes.items.some((c) => c.metadata?.annotations?.[DEFAULT_CLASS_ANNOTATION] === "true"))
    throw new Error(
      `cluster ${o.server} has no default storage class: name one of its classes in the pool's ${STORAGE_CLASS_ATTRIBUTE} attribute`,
    );
}

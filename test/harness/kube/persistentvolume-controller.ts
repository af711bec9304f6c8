/**
 * The persistent volume controller of the fake API server, with the one dynamic provisioner it
 * runs, after the Persistent Volumes, Storage Classes and Dynamic Volume Provisioning concepts pages
 * (kubernetes.io/docs/concepts/storage/):
 * - a claim with a `storageClassName` whose class names {@link FAKE_PROVISIONER} gets a volume
 *   `pvc-<claim uid>` of the claim's size and access modes, with the class's `reclaimPolicy`, bound
 *   to it (claimRef on the volume, `volumeName` and phase Bound on the claim), as a host-path
 *   provisioner does (a directory per volume on the node, like rancher's local-path provisioner);
 * - a claim that names its volume (`spec.volumeName`, static binding) is bound to it when the volume
 *   exists and is free or reserved for that claim (a claimRef without a uid);
 * - a claim whose class does not exist, or that names no class when the cluster has no default,
 *   stays Pending (the real controller only records an event, ProvisioningFailed);
 * - a volume whose claim is gone is Released: with reclaimPolicy Delete it is deleted, and its
 *   directory with it (the provisioner's deleter); with Retain it stays Released, its data kept,
 *   until someone deletes it;
 * - the DefaultStorageClass admission plugin: a new claim without `storageClassName` gets the class
 *   annotated `storageclass.kubernetes.io/is-default-class: "true"` (the newest, if several).
 * Not modelled: volumeBindingMode WaitForFirstConsumer (every class binds Immediately), the
 * pvc-protection and pv-protection finalizers (a claim in use is deleted at once; the directory a
 * running pod has mounted stays until the pod goes), binding claims to pre-made volumes without
 * `volumeName`, expansion, snapshots.
 */
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { kindFor } from "./kinds";
import type { KubeObject } from "./kinds";
import type { ApiState, StoreEvent } from "./state";
import { WorkQueue } from "./work-queue";

/** The provisioner name of the fake's host-path volumes (a StorageClass's `provisioner`). */
export const FAKE_PROVISIONER = "fake.steward.test/host-path";
export const DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class";

const PVCS = kindFor("", "v1", "persistentvolumeclaims")!;
const PVS = kindFor("", "v1", "persistentvolumes")!;
const CLASSES = kindFor("storage.k8s.io", "v1", "storageclasses")!;

/** The cluster's default class (the newest of those annotated default), if any. */
export function defaultStorageClass(state: ApiState): KubeObject | undefined {
  return state
    .list(CLASSES)
    .filter((c) => c.metadata.annotations?.[DEFAULT_CLASS_ANNOTATION] === "true")
    .sort((a, b) => (b.metadata.creationTimestamp ?? "").localeCompare(a.metadata.creationTimestamp ?? ""))[0];
}

/** The DefaultStorageClass admission plugin, on a claim being created. */
export function admitDefaultStorageClass(state: ApiState, claim: KubeObject): void {
  if (!claim.spec || claim.spec.storageClassName !== undefined) return;
  const dflt = defaultStorageClass(state);
  if (dflt) claim.spec.storageClassName = dflt.metadata.name;
}

export class PersistentVolumeController {
  private readonly work = new WorkQueue("fake persistent volume controller", (key) => this.sync(key));
  private readonly unsubscribe: () => void;

  /** `volumesDir`: where the provisioner makes its volumes' directories (the node's disk). */
  constructor(
    private readonly state: ApiState,
    private readonly volumesDir: string,
  ) {
    this.unsubscribe = state.subscribe((e) => this.observe(e));
    for (const c of state.list(PVCS)) this.work.add(`claim/${c.metadata.namespace}/${c.metadata.name}`);
  }

  stop(): void {
    this.work.stop();
    this.unsubscribe();
  }

  private observe(e: StoreEvent): void {
    const m = e.object.metadata;
    if (e.kind === PVCS) {
      this.work.add(`claim/${m.namespace}/${m.name}`);
      const volume = e.object.spec?.volumeName ?? e.previous?.spec?.volumeName;
      if (volume) this.work.add(`volume/${volume}`);
    } else if (e.kind === PVS) {
      this.work.add(`volume/${m.name}`);
      const ref = e.object.spec?.claimRef;
      if (ref?.name) this.work.add(`claim/${ref.namespace}/${ref.name}`);
    } else if (e.kind === CLASSES && e.type === "ADDED") {
      // A class made late: its Pending claims are provisioned now.
      for (const c of this.state.list(PVCS))
        if (c.status?.phase !== "Bound") this.work.add(`claim/${c.metadata.namespace}/${c.metadata.name}`);
    }
  }

  private sync(key: string): void {
    const [what, a, b] = key.split("/") as [string, string, string?];
    if (what === "claim") this.syncClaim(a, b!);
    else this.syncVolume(a);
  }

  private syncClaim(ns: string, name: string): void {
    const claim = this.state.find(PVCS, ns, name);
    if (!claim || claim.metadata.deletionTimestamp || claim.status?.phase === "Bound") return;
    if (claim.spec?.volumeName) {
      const pv = this.state.find(PVS, undefined, claim.spec.volumeName);
      const ref = pv?.spec?.claimRef;
      const free = !ref || (ref.namespace === ns && ref.name === name && (!ref.uid || ref.uid === claim.metadata.uid));
      if (pv && free && !pv.metadata.deletionTimestamp) this.bind(pv, claim);
      return;
    }
    const className: string | undefined = claim.spec?.storageClassName;
    if (!className) return;
    const cls = this.state.find(CLASSES, undefined, className);
    if (!cls || cls.provisioner !== FAKE_PROVISIONER) return;
    const pvName = `pvc-${claim.metadata.uid}`;
    const path = join(this.volumesDir, `${pvName}_${ns}_${name}`);
    mkdirSync(path, { recursive: true });
    const pv =
      this.state.find(PVS, undefined, pvName) ??
      this.state.create(PVS, undefined, {
        apiVersion: "v1",
        kind: "PersistentVolume",
        metadata: { name: pvName, annotations: { "pv.kubernetes.io/provisioned-by": FAKE_PROVISIONER } },
        spec: {
          capacity: { storage: claim.spec?.resources?.requests?.storage ?? "1Gi" },
          accessModes: claim.spec?.accessModes ?? ["ReadWriteOnce"],
          persistentVolumeReclaimPolicy: cls.reclaimPolicy ?? "Delete",
          storageClassName: className,
          volumeMode: claim.spec?.volumeMode ?? "Filesystem",
          hostPath: { path, type: "DirectoryOrCreate" },
          claimRef: { kind: "PersistentVolumeClaim", apiVersion: "v1", namespace: ns, name, uid: claim.metadata.uid },
        },
      });
    this.bind(pv, claim);
  }

  private bind(pv: KubeObject, claim: KubeObject): void {
    const { namespace: ns, name, uid } = claim.metadata as { namespace: string; name: string; uid: string };
    this.state.mutate(PVS, undefined, pv.metadata.name!, pv.metadata.uid!, (v) => {
      v.spec.claimRef = { kind: "PersistentVolumeClaim", apiVersion: "v1", namespace: ns, name, uid };
    });
    this.state.updateStatus(PVS, undefined, pv.metadata.name!, pv.metadata.uid!, (s) => {
      s.phase = "Bound";
    });
    this.state.mutate(PVCS, ns, name, uid, (c) => {
      c.spec.volumeName = pv.metadata.name;
      c.metadata.annotations = { ...c.metadata.annotations, "pv.kubernetes.io/bind-completed": "yes" };
    });
    this.state.updateStatus(PVCS, ns, name, uid, (s) => {
      s.phase = "Bound";
      s.accessModes = pv.spec?.accessModes ?? ["ReadWriteOnce"];
      s.capacity = pv.spec?.capacity;
    });
  }

  private syncVolume(name: string): void {
    const pv = this.state.find(PVS, undefined, name);
    if (!pv || pv.metadata.deletionTimestamp) return;
    const ref = pv.spec?.claimRef;
    const claim = ref ? this.state.find(PVCS, ref.namespace, ref.name) : undefined;
    const phase = !ref
      ? "Available"
      : claim && (!ref.uid || claim.metadata.uid === ref.uid)
        ? claim.spec?.volumeName === name
          ? "Bound"
          : "Available"
        : ref.uid
          ? "Released"
          : "Available";
    if (phase === "Released" && pv.spec?.persistentVolumeReclaimPolicy === "Delete") {
      const path: string | undefined = pv.spec?.hostPath?.path;
      // The deleter removes only what the provisioner made.
      if (
        pv.metadata.annotations?.["pv.kubernetes.io/provisioned-by"] === FAKE_PROVISIONER &&
        path?.startsWith(this.volumesDir + "/")
      )
        rmSync(path, { recursive: true, force: true });
      this.state.delete(PVS, undefined, name, { preconditions: { uid: pv.metadata.uid } });
      return;
    }
    if (pv.status?.phase !== phase)
      this.state.updateStatus(PVS, undefined, name, pv.metadata.uid!, (s) => {
        s.phase = phase;
      });
  }
}
